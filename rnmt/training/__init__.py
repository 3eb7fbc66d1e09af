"""Training: loss, learning-rate schedules, checkpoints and the trainer loop."""
