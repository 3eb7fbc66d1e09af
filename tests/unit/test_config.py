import pytest

from rnmt.config import apply_overrides, config_from_dict, load_config
from rnmt.errors import UserError


def test_unknown_key_names_it_and_suggests_the_closest():
    with pytest.raises(UserError, match=r"unknown config key 'model.hiden_size'; did you mean 'model.hidden_size'"):
        config_from_dict({"model": {"hiden_size": 3}})


def test_unknown_section_is_rejected():
    with pytest.raises(UserError, match="unknown config key 'trian'; did you mean 'train'"):
        config_from_dict({"trian": {}})


def test_wrong_type_names_the_key():
    with pytest.raises(UserError, match="'train.max_steps' must be of type int"):
        config_from_dict({"train": {"max_steps": "many"}})
    with pytest.raises(UserError, match="'model.layer_norm' must be true or false"):
        config_from_dict({"model": {"layer_norm": 1}})


def test_ints_are_accepted_where_floats_are_expected():
    assert config_from_dict({"train": {"lr": 1}}).train.lr == 1.0


def test_set_overrides_use_yaml_values():
    cfg = config_from_dict({}, ["train.max_steps=7", "model.cell=atr", "data.dev=null", "train.lr=5e-4"])
    assert cfg.train.max_steps == 7 and cfg.model.cell == "atr" and cfg.data.dev is None
    assert cfg.train.lr == pytest.approx(5e-4)


def test_apply_overrides_sets_nested_and_moved_keys_in_the_tree():
    tree = {"model": {"arch": "cseq2seq1", "options": {"context": "mean"}}}
    out = apply_overrides(tree, ["model.options.context=last", "train.max_steps=7", "model.attention=general"],
                          warn_deprecated=False)
    assert out["model"]["options"] == {"context": "last", "attention": "general"}  # model.attention moved there
    assert out["train"] == {"max_steps": 7}
    with pytest.raises(UserError, match="is not a section"):
        apply_overrides({"train": {"max_steps": 3}}, ["train.max_steps.x=1"])


def test_bad_override_is_a_user_error():
    with pytest.raises(UserError, match="--set expects key.path=value"):
        config_from_dict({}, ["train.max_steps"])


def test_quickstart_config_is_valid():
    from tests.support import REPO

    cfg = load_config(REPO / "configs" / "quickstart.yaml")
    assert cfg.model.arch == "rnnsearch" and cfg.data.train == "data/sample/train"


# -- values are checked when the config loads ---------------------------------------------

@pytest.mark.parametrize("override, needle", [
    ("train.lr=-0.01", "'train.lr' must be greater than 0, got -0.01"),
    ("train.lr=0", "'train.lr' must be greater than 0"),
    ("train.max_steps=-3", "'train.max_steps' must be at least 0, got -3"),
    ("search.beam=0", "'search.beam' must be in [1, 8192]"),
    ("model.dropout=1.0", "'model.dropout' must be in [0, 1), got 1.0"),
    ("train.label_smoothing=-0.1", "'train.label_smoothing' must be in [0, 1)"),
    ("train.seed=-1", "'train.seed' must be in [0, 4294967295]"),
    ("model.enc_layers=100000000", "'model.enc_layers' must be in [1, 128]"),
    ("data.batch_tokens=0", "'data.batch_tokens' must be at least 1"),
    ("train.lr=.nan", "'train.lr' must be a finite number"),
    ("search.max_len_ratio=.inf", "'search.max_len_ratio' must be a finite number"),
    ("train.max_epochs=99999999999999999999999", "'train.max_epochs' is out of range"),
    ("train.schedule=rnmt_plus", "'train.decay_end' (64000) must be greater than train.decay_start (70000)"),
])
def test_out_of_range_values_are_refused_naming_the_key(override, needle):
    extra = ["train.decay_start=70000"] if "rnmt_plus" in override else []
    with pytest.raises(UserError) as info:
        config_from_dict({}, [override, *extra])
    assert needle in str(info.value)


@pytest.mark.parametrize("override, needle", [
    ("search.normalize=bogus", "'search.normalize' must be one of gnmt, length, none, got 'bogus'"),
    ("train.validation_search=bogus", "'train.validation_search' must be one of greedy, beam"),
    ("train.validation_search=beem", "did you mean 'beam'?"),
    ("train.schedule=warmup-decay", "did you mean 'warmup_decay'?"),
    ("model.readout=maxuot", "'model.readout' must be one of tanh, maxout, got 'maxuot'; did you mean 'maxout'?"),
    ("train.amp=fp16", "'train.amp' must be one of auto, bf16, none"),
    ("data.vocab.type=unigam", "did you mean 'unigram'?"),
    ("model.encoder_norm=true", "'model.encoder_norm' must be one of post, pre, got True"),
    ("train.device=gpu", "'train.device' must be auto, cpu, cuda or cuda:N, got 'gpu'"),
])
def test_enumerations_name_their_choices_and_the_closest(override, needle):
    with pytest.raises(UserError) as info:
        config_from_dict({}, [override])
    assert needle in str(info.value)


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(UserError) as info:
        config_from_dict({"train": {"schedule": "x" * 5000}})
    assert len(str(info.value)) < 250 and "\n" not in str(info.value)


def test_every_enumeration_matches_what_its_module_accepts():
    import typing

    from rnmt import config
    from rnmt.data.vocab import MODEL_TYPES
    from rnmt.models.cseq2seq import CONTEXT_MODES, Cseq2seqIIOptions, Cseq2seqIOptions
    from rnmt.models.encoders import ENCODER_NORMS, ENCODERS
    from rnmt.models.luong import LuongOptions
    from rnmt.modules.luong import SCORES
    from rnmt.training.schedules import SCHEDULES

    def choices(options: type, name: str) -> tuple:
        return typing.get_args(typing.get_type_hints(options)[name])

    assert typing.get_args(config.VocabType) == MODEL_TYPES
    assert choices(Cseq2seqIOptions, "context") == choices(Cseq2seqIIOptions, "context") == CONTEXT_MODES
    assert typing.get_args(config.EncoderKind) == ENCODERS
    assert typing.get_args(config.EncoderNorm) == ENCODER_NORMS
    assert choices(LuongOptions, "attention") == SCORES
    assert typing.get_args(config.Schedule) == SCHEDULES


def test_every_built_in_config_is_valid():
    import yaml

    from tests.support import REPO

    checked = 0
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        tree = yaml.safe_load(path.read_text(encoding="utf-8"))
        if tree and set(tree) <= {"base", "data", "model", "train", "search"}:  # not a reproduction spec
            load_config(path)
            checked += 1
    assert checked >= 20
