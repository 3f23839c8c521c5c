"""The key file: remaps load as comma-joined Textual keys, and every mistake is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from raglabel.config.bindings import BINDING_IDS
from raglabel.config.keymap import default_path, load_keymap
from raglabel.errors import InputError


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep the developer's own key file and environment out of every test."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("RAGLABEL_KEYS", raising=False)
    return config


def keyfile(tmp_path: Path, text: str | bytes, name: str = "keys.toml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error(path: Path) -> str:
    with pytest.raises(InputError) as raised:
        load_keymap(path)
    assert raised.value.source == str(path)
    return raised.value.message


# -- the bindings ------------------------------------------------------------------------


def test_binding_ids_and_defaults() -> None:
    defaults = {name: keys for name, (keys, _) in BINDING_IDS.items()}
    assert defaults == {
        **{f"grade_{g}": str(g) for g in range(1, 6)},
        "clear": "x",
        "undo": "u",
        "down": "j,down",
        "up": "k,up",
        "next_query": "n",
        "prev_query": "p",
        "queue": "g",
        "cycle_k": "K",
        "accept": "a",
        "accept_all": "A",
        "judge": "J",
        "skip": "s",
        "flag": "f",
        "filter": "slash",
        "help": "question_mark",
        "palette": "ctrl+p",
        "queries": "q",
        "runs": "r",
        "review": "v",
        "progress": "P",
        "search": "b",
        "metrics": "m",
        "run_columns": "c",
        "mine": "y",
        "answer_figures": "t",
        "estimate": "e",
        "answers": "w",
        "next_criterion": "l,right",
        "prev_criterion": "h,left",
        "next_sentence": "right_square_bracket",
        "prev_sentence": "left_square_bracket",
        "unsupported": "i",
        "contexts_down": "pagedown",
        "contexts_up": "pageup",
    }
    assert list(BINDING_IDS)[:6] == ["grade_1", "grade_2", "grade_3", "grade_4", "grade_5", "clear"]
    for _, description in BINDING_IDS.values():
        assert description and len(description) <= 40


def test_defaults_have_no_clashes(tmp_path: Path) -> None:
    # An empty table is valid, which also checks the defaults against each other.
    assert load_keymap(keyfile(tmp_path, "[keys]\n")) == {}
    assert load_keymap(keyfile(tmp_path, "# nothing remapped\n")) == {}


def test_keymap_module_does_not_load_textual() -> None:
    code = "import sys, raglabel.config.keymap; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- happy paths -------------------------------------------------------------------------


def test_string_and_list_forms(tmp_path: Path) -> None:
    path = keyfile(
        tmp_path,
        '[keys]\nundo = "u,ctrl+z"\nfilter = ["slash", "ctrl+f"]\nhelp = ["f1,question_mark"]\n',
    )
    assert load_keymap(path) == {
        "undo": "u,ctrl+z",
        "filter": "slash,ctrl+f",
        "help": "f1,question_mark",
    }


def test_only_remapped_ids_are_returned(tmp_path: Path) -> None:
    path = keyfile(tmp_path, '[keys]\ngrade_1 = "1"\nskip = "shift+tab"\n')
    assert load_keymap(path) == {"grade_1": "1", "skip": "shift+tab"}


def test_keys_are_normalised(tmp_path: Path) -> None:
    # Spaces after commas are trimmed, repeats dropped, and typed characters become the
    # names Textual gives them, so clashes are found whichever way a key is written.
    path = keyfile(tmp_path, '[keys]\nfilter = "/, ctrl+f, /"\nhelp = "?"\nflag = "@"\n')
    assert load_keymap(path) == {"filter": "slash,ctrl+f", "help": "question_mark", "flag": "at"}


def test_a_key_can_move_between_bindings(tmp_path: Path) -> None:
    # x leaves clear before undo takes it: only the final bindings must be distinct.
    path = keyfile(tmp_path, '[keys]\nclear = "delete"\nundo = "x,u"\n')
    assert load_keymap(path) == {"clear": "delete", "undo": "x,u"}


def test_utf8_with_bom(tmp_path: Path) -> None:
    path = keyfile(tmp_path, b'\xef\xbb\xbf[keys]\nundo = "ctrl+z"\n')
    assert load_keymap(path) == {"undo": "ctrl+z"}


def test_environment_variable_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_user_config: Path
) -> None:
    (no_user_config / "raglabel").mkdir(parents=True)
    (no_user_config / "raglabel" / "keys.toml").write_text('[keys]\nundo = "ctrl+z"\n')
    env = keyfile(tmp_path, '[keys]\nskip = "space"\n', name="mine.toml")
    monkeypatch.setenv("RAGLABEL_KEYS", str(env))
    assert load_keymap(None) == {"skip": "space"}
    # An explicit path beats the environment.
    explicit = keyfile(tmp_path, '[keys]\nflag = "F"\n', name="explicit.toml")
    assert load_keymap(explicit) == {"flag": "F"}


def test_environment_variable_naming_a_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("RAGLABEL_KEYS", str(missing))
    with pytest.raises(InputError) as raised:
        load_keymap(None)
    assert str(raised.value) == f"{missing}: no such key file (named by $RAGLABEL_KEYS)"


def test_xdg_config_file(no_user_config: Path) -> None:
    assert load_keymap(None) == {}  # no file: the defaults
    path = no_user_config / "raglabel" / "keys.toml"
    assert default_path() == path
    path.parent.mkdir(parents=True)
    path.write_text('[keys]\nqueries = "escape"\n')
    assert load_keymap(None) == {"queries": "escape"}


def test_home_config_without_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / ".config" / "raglabel" / "keys.toml"
    assert default_path() == path
    path.parent.mkdir(parents=True)
    path.write_text('[keys]\nruns = "R"\n')
    assert load_keymap(None) == {"runs": "R"}


# -- errors ------------------------------------------------------------------------------


def test_missing_explicit_file(tmp_path: Path) -> None:
    assert error(tmp_path / "absent.toml") == "no such key file"


def test_toml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = keyfile(tmp_path, '[keys]\nundo = "u\n')
    message = error(path)
    assert message.startswith("is not valid TOML: ")
    assert "column" in message
    with pytest.raises(InputError) as raised:
        load_keymap(path)
    assert raised.value.line == 2


def test_not_utf8(tmp_path: Path) -> None:
    path = keyfile(tmp_path, b'[keys]\nundo = "\xff"\n')
    assert error(path) == "is not UTF-8 text (byte 9 of the line)"
    with pytest.raises(InputError) as raised:
        load_keymap(path)
    assert raised.value.line == 2


def test_unknown_binding_lists_the_valid_ids(tmp_path: Path) -> None:
    message = error(keyfile(tmp_path, '[keys]\nundoo = "z"\n'))
    assert message == f"keys.undoo: unknown binding 'undoo'; valid ids: {', '.join(BINDING_IDS)}"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    message = error(keyfile(tmp_path, 'theme = "dark"\n[keys]\nundo = "z"\n'))
    assert message == "unknown setting 'theme': a key file holds only a [keys] table"
    message = error(keyfile(tmp_path, '[bindings]\nundo = "z"\n'))
    assert message == "unknown setting 'bindings': a key file holds only a [keys] table"


def test_keys_must_be_a_table(tmp_path: Path) -> None:
    assert error(keyfile(tmp_path, 'keys = "u"\n')) == "keys: must be a table of binding id = keys"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('""', "empty key"),
        ('"u,,z"', "empty key"),
        ("[]", "empty key list"),
        ('["u", ""]', "empty key"),
        ("3", "expected a key string like 'u,ctrl+z' or a list of key strings"),
        ('["u", 3]', "expected a key string like 'u,ctrl+z' or a list of key strings"),
        ('"page up"', "'page up' contains whitespace; write keys like 'ctrl+x' or 'pageup'"),
        ('"ctrl+"', "'ctrl+' has an empty part; write 'plus' for the + key"),
        ('"+x"', "'+x' has an empty part; write 'plus' for the + key"),
        (
            '"ctl+x"',
            "'ctl+x': 'ctl' is not a modifier (one of ctrl, shift, alt, meta, super, hyper)",
        ),
        (
            '"Escape"',
            "'Escape' is not a Textual key name (names are lower case, like 'escape', 'f5', "
            "'slash', 'question_mark')",
        ),
        (
            '"f-5"',
            "'f-5' is not a Textual key name (names are lower case, like 'escape', 'f5', "
            "'slash', 'question_mark')",
        ),
    ],
)
def test_bad_keys(tmp_path: Path, value: str, message: str) -> None:
    assert error(keyfile(tmp_path, f"[keys]\nundo = {value}\n")) == f"keys.undo: {message}"


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = keyfile(tmp_path, '[keys]\nundoo = "z"\nskip = "ctrl+"\n')
    message = error(path)
    assert message.startswith("keys.undoo: unknown binding 'undoo'")
    assert message.endswith("; keys.skip: 'ctrl+' has an empty part; write 'plus' for the + key")


def test_key_given_to_two_bindings(tmp_path: Path) -> None:
    # undo takes clear's default key while clear keeps it.
    assert error(keyfile(tmp_path, '[keys]\nundo = "x"\n')) == (
        "key 'x' is bound to both 'clear' and 'undo'; remap one of them"
    )
    # Two remaps onto one key, written differently.
    assert error(keyfile(tmp_path, '[keys]\nskip = "slash"\nfilter = "/"\nflag = "f"\n')) == (
        "key 'slash' is bound to both 'skip' and 'filter'; remap one of them"
    )


def test_cli_reports_key_file_errors_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from raglabel.cli.main import main

    db = tmp_path / "p.db"
    assert main(["init", str(db)]) == 0
    path = keyfile(tmp_path, '[keys]\nundo = "x"\n')
    capsys.readouterr()
    assert main(["label", str(db), "--keys", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"raglabel label: error: {path}: key 'x' is bound to both 'clear' and 'undo'; "
        "remap one of them\n"
    )


def test_a_config_folder_that_cannot_be_searched_is_said_not_taken_for_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root searches any folder, so the refusal a user with an unreadable home gets from
    # the system is stood in for here: the same PermissionError, on the same call.
    monkeypatch.delenv("RAGLABEL_KEYS", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    real = Path.is_file

    def refused(self: Path) -> bool:
        if self.is_relative_to(tmp_path):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_file", refused)
    with pytest.raises(InputError, match=r"cannot look for the key file here \(Permission"):
        load_keymap()
