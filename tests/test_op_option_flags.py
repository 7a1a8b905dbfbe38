"""The op options on the command line (`--uplo` / `--upper`, `--pivot`, `--side`, `--adjoint`):
each op takes only its own, a flag of another op's option is one line and exit 2, every word
is parsed strictly, and a list runs every combination."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cusolver_trace import ops
from cusolver_trace.cli import main

FLAGS = {o.flag: o for o in ops.all_options().values()}


def _run(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:   # argparse's own refusals
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("op", ops.names(replayable=True))
def test_a_flag_of_another_ops_option_is_one_line_exit_2(op, capsys):
    mine = {o.flag for o in ops.get(op).options}
    for flag, opt in FLAGS.items():
        if flag in mine:
            continue
        word = next(iter(opt.words))
        rc, _, err = _run(["compare", "--op", op, "--n", "4", "--repeat", "0", "--device", "cpu",
                           flag, word], capsys)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert f"is not an option of {op}" in err


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # capsys is read per call
@given(flag=st.sampled_from(sorted(FLAGS)),
       word=st.one_of(st.text(max_size=8), st.sampled_from(["true", "LEFT", "u", "no,yes",
                                                            "right,right", " l", "1", ""])))
def test_property_option_words_are_parsed_strictly(flag, word, capsys):
    opt = FLAGS[flag]
    op = next(o.name for o in ops.all_ops() if o.replayable and opt in o.options)
    argv = ["compare", "--op", op, "--n", "3", "--repeat", "0", "--device", "cpu", flag, word]
    before = list(argv)
    rc, out, err = _run(argv, capsys)
    assert argv == before and "Traceback" not in err
    items = word.split(",")
    good = (word != "" and all(w.lower() in opt.words for w in items)
            and len({opt.words[w.lower()] for w in items}) == len(items))
    if good and flag == "--pivot" and False in {opt.words[w.lower()] for w in items}:
        # torch's CPU LU always pivots: refused up front on the CPU, one line
        assert rc == 2 and "CUDA only" in err and len(err.strip().splitlines()) == 1
    elif good:
        assert rc == 0, err
        assert f"{len(items)} compared" in out
    else:
        assert rc == 2 and len(err.strip().splitlines()) == 1


def test_a_list_runs_every_combination(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc, _, _ = _run(["compare", "--op", "lu_solve", "--n", "5", "--repeat", "0", "--device", "cpu",
                     "--side", "left,right", "--adjoint", "false,true", "--json", str(out)], capsys)
    assert rc == 0
    got = sorted((d["spec"]["options"]["left"], d["spec"]["options"]["adjoint"])
                 for d in json.loads(out.read_text()))
    assert got == [(False, False), (False, True), (True, False), (True, True)]
    assert all(d["verdict"] in ("bitwise-equal", "within-tolerance")
               for d in json.loads(out.read_text()))


@pytest.mark.parametrize("command", ["compare", "devices", "sweep"])
def test_each_flags_help_names_only_ops_the_subcommand_takes(command):
    """``compare --help`` listed ``spd_inverse`` under ``--uplo`` although its ``--op``
    refuses it (a fresh user's report): each option flag's "ops:" list is a subset of the
    subcommand's ``--op`` choices."""
    from cusolver_trace.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict))
    p = sub.choices[command]
    takes = set(ops.names(replayable=True) if command != "sweep" else ops.names())
    for action in p._actions:
        if action.help and "; ops: " in action.help:
            listed = {w.strip() for w in action.help.rsplit("; ops: ", 1)[1].split(",")}
            assert listed <= takes, (action.option_strings, listed - takes)


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_each_word_a_flag_takes_is_named_in_its_help(flag):
    """`--help` names every word the flag accepts (`--pivot yes` is taken, so the help says
    so), compared without case, as the words are parsed."""
    opt = FLAGS[flag]
    words_in_help = {w.strip(" ,.():").lower() for w in opt.help.replace(",", " ").split()}
    missing = [w for w in opt.words if w.lower() not in words_in_help]
    assert not missing, f"{flag}: {missing} accepted but not named in its help: {opt.help!r}"
