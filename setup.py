"""Build hook (everything else is in pyproject.toml): the wheel carries the top-level
configs/ directory as rnmt/configs/, so the built-in configs keep one source in the
repository and still travel with an installed package (see rnmt/resources.py)."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithConfigs(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads configs/ from the checkout
            return
        source = Path(__file__).resolve().parent / "configs"
        for path in sorted(source.rglob("*.yaml")):
            target = Path(self.build_lib) / "rnmt" / "configs" / path.relative_to(source)
            self.mkpath(str(target.parent))
            self.copy_file(str(path), str(target))


setup(cmdclass={"build_py": BuildPyWithConfigs})
