"""A study's ``design.file`` table whose content is not what it expects: exit 2 naming the
key and the file, never echoing the file's bytes (its header names, a cell's text, a line
the CSV reader chokes on, undecodable bytes)."""

import pytest
from click.testing import CliRunner
from study_helpers import STUDY
from study_helpers import write_study as write

from fesens.cli.study import study_command

TABLE_STUDY = STUDY.replace('type = "lhs"\nsamples = 4\nseed = 3',
                            'type = "table"\nfile = "rows.csv"')
for fixed in ("range = [0.8, 1.2]\n", "range = [1.0, 2.0]\n", "range = [-20.0, 20.0]\n"):
    TABLE_STUDY = TABLE_STUDY.replace(fixed, "", 1)


@pytest.mark.parametrize("content, said", [
    (b"SECRET=hunter2,F\n1.0,2.0\n", "no column 'E' in the header row"),
    (b"E,F,angle\n1.0,SECRET=hunter2,0\n", "row 1, column 'F' is not a finite number"),
    # a field beyond the csv module's limit (131072 characters)
    (b"E,F,angle\n1.0,2.0,\"" + b"SECRET=hunter2" * 10000 + b"\"\n",
     "field larger than field limit"),
    (b"E,F,angle\n\xff\xfeSECRET=hunter2\n", "as a CSV table: not UTF-8 text"),
])
def test_a_table_design_file_is_named_never_echoed(tmp_path, content, said):
    study = write(tmp_path, TABLE_STUDY)
    (tmp_path / "rows.csv").write_bytes(content)
    result = CliRunner().invoke(study_command, [str(study), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert 'design.file = "rows.csv"' in result.output and said in result.output
    assert "hunter2" not in result.output and "SECRET" not in result.output
    assert not (tmp_path / "out").exists()
