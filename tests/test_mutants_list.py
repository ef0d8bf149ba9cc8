"""The planted bugs' list (tests/mutants.yaml, `make mutants`) follows the code: each mutant's line is in its file
exactly once and changes, and the tests it names exist, so `make mutants` plants what it says."""

from __future__ import annotations

from pathlib import Path

from render.tools.mutants import LIST, read_list

ROOT = Path(__file__).resolve().parent.parent


def test_every_mutant_names_one_line_of_its_file_and_tests_that_exist():
    mutants = read_list(LIST)
    assert len(mutants) >= 15
    for mutant in mutants:
        text = (ROOT / mutant.file).read_text()
        assert text.count(mutant.old) == 1, (mutant.name, mutant.old)
        assert mutant.new != mutant.old and "\n" not in mutant.old.strip("\n"), mutant.name
        files = [test.split("::")[0] for test in mutant.tests if test.startswith("tests/")]
        assert files and all((ROOT / file).is_file() for file in files), (mutant.name, mutant.tests)
