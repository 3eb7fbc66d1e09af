"""Evaluation: corpus metrics through sacrebleu, paired bootstrap, BLEU by source length, AER.

Every score here is computed by sacrebleu itself so that numbers printed by rnmt can be
reproduced with the ``sacrebleu`` command line and its signature string.
"""
