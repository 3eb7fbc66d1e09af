"""Translation models behind one interface (see `rnmt.models.base`)."""

from rnmt.models.base import TranslationModel
from rnmt.models.loading import LoadedModel, count_parameters, load_model
from rnmt.models.registry import architectures, build_model, build_skeleton, register

__all__ = ["LoadedModel", "TranslationModel", "architectures", "build_model", "build_skeleton", "count_parameters",
           "load_model", "register"]
