"""The patches that let the peer toolkits build and import (benchmarks/peers/fairseq/)."""

from __future__ import annotations

import importlib.util

from tests.support import BENCHMARKS


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "peers" / "fairseq" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SETUP = '''def do_setup(package_data):
    setup(
        name="fairseq",
        setup_requires=[
            "cython",
            "numpy",
        ],
        install_requires=[],
    )
try:
    from torch.utils import cpp_extension
    extensions.append(cpp_extension.CppExtension("fairseq.libbase"))
except ImportError:
    pass
'''


def test_fairseqs_setup_skips_the_missing_extensions_and_its_setup_requires(tmp_path):
    setup = tmp_path / "setup.py"
    setup.write_text(SETUP, encoding="utf-8")
    patch_setup = load("patch_setup")
    assert patch_setup.main(str(setup)) == 0
    text = setup.read_text(encoding="utf-8")
    assert "setup_requires" not in text and "from torch.utils import cpp_extension" not in text
    assert "raise ImportError" in text and "install_requires=[]" in text
    assert patch_setup.main(str(setup)) == 1  # a setup.py it does not recognise is refused


PLUGINS = '''import importlib
import warnings


def scan(importer, modname):
    if True:
        if True:
            if True:
                    m = importer.find_module(modname)
                    with warnings.catch_warnings(record=True) as recorded_warnings:
                        loaded_mod = m.load_module(modname)
    return loaded_mod
'''


def test_hydras_plugin_scan_imports_by_name_on_python_312(tmp_path):
    plugins = tmp_path / "hydra" / "core" / "plugins.py"
    plugins.parent.mkdir(parents=True)
    plugins.write_text(PLUGINS, encoding="utf-8")
    patch = load("patch_py311")
    assert patch.main([str(tmp_path), "hydra"]) == 0
    text = plugins.read_text(encoding="utf-8")
    assert "find_module" not in text and "importlib.import_module(modname)" in text
    assert patch.main([str(tmp_path), "hydra"]) == 0 and plugins.read_text(encoding="utf-8") == text  # idempotent
