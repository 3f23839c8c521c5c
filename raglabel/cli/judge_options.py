"""The options of every command that asks the judge (``raglabel judge``, ``raglabel agree
--probe``): where and whom to ask, how, and under what load; and what they make (the
request parameters, the run's limits)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Final

from raglabel.cli.arguments import float_in, int_in
from raglabel.errors import UsageError

if TYPE_CHECKING:
    from raglabel.judge.prompt import Template
    from raglabel.judge.work import RunLimits
    from raglabel.session.judging import JudgeSetup

# Caps on the options (documented in --help and the README): each is far past any real
# need and keeps a typo from planning a billion requests or sleeping for ever.
MAX_TOKENS: Final = 1_000_000
MAX_CONCURRENCY: Final = 1_000
MAX_ATTEMPTS: Final = 100
MAX_TIMEOUT_S: Final = 3_600
MIN_RPM, MAX_RPM = 0.1, 1_000_000
#: The options' defaults, by destination: what a command that takes them only with
#: another option compares against to tell whether one was given.
DEFAULTS: Final[dict[str, object]] = {
    "api_key_env": "OPENAI_API_KEY",
    "temperature": 0.0,
    "max_tokens": 256,
    "json_mode": False,
    "concurrency": 8,
    "timeout": 60.0,
    "max_attempts": 6,
}


#: What --max-tokens says to a command that also judges answer samples.
_CHUNKS_GET_MORE: Final = "; with --answers a ctx_rank_prec call gets at least 64 + 48 per chunk"


def add_endpoint_options(
    group: Any, *, required: bool = True, many: str = "repeat for an ensemble"
) -> None:
    """``--base-url``, ``--model`` (repeatable: ``many`` says what several make) and
    ``--api-key-env``; ``required`` as argparse means it (a command needing them only
    with another option checks itself)."""
    group.add_argument(
        "--base-url", required=required, metavar="URL", help="e.g. http://localhost:11434/v1"
    )
    group.add_argument(
        "--model",
        action="append",
        required=required,
        metavar="NAME",
        help=f"the model to ask; {many}",
    )
    group.add_argument(
        "--api-key-env",
        default=DEFAULTS["api_key_env"],
        metavar="VAR",
        help="environment variable holding the API key; the key is never stored or printed"
        " (default: OPENAI_API_KEY)",
    )


def add_asking_options(group: Any, *, answers: bool = True) -> None:
    """``--prompt``, ``--temperature``, ``--max-tokens`` and ``--json-mode``; ``answers``:
    the command also judges answer samples (``--answers``), whose chunk calls get more."""
    group.add_argument(
        "--prompt",
        metavar="FILE",
        help="own prompt: {query} {passage} {fence} {title}; it may start with a header"
        " between two +++ lines declaring its label scale, grades and reply (json or"
        " final-score)",
    )
    group.add_argument(
        "--temperature",
        type=float_in(0, 2),
        default=DEFAULTS["temperature"],
        metavar="T",
        help="sampling temperature, 0 to 2 (default: 0)",
    )
    group.add_argument(
        "--max-tokens",
        type=int_in(1, MAX_TOKENS),
        default=DEFAULTS["max_tokens"],
        metavar="N",
        help=f"reply limit, 1 to {MAX_TOKENS:,}"
        f" (default: 256{_CHUNKS_GET_MORE if answers else ''})",
    )
    group.add_argument(
        "--json-mode",
        action="store_true",
        help='send response_format {"type": "json_object"} (when the server supports it)',
    )


def add_load_options(group: Any) -> None:
    """``--concurrency``, ``--rpm``, ``--timeout`` and ``--max-attempts``."""
    group.add_argument(
        "--concurrency",
        type=int_in(1, MAX_CONCURRENCY),
        default=DEFAULTS["concurrency"],
        metavar="N",
        help=f"requests at once, 1 to {MAX_CONCURRENCY:,} (default: 8)",
    )
    group.add_argument(
        "--rpm",
        type=float_in(MIN_RPM, MAX_RPM),
        metavar="N",
        help=f"at most N requests per minute, {MIN_RPM:g} to {MAX_RPM:,} (default: no limit)",
    )
    group.add_argument(
        "--timeout",
        type=float_in(0, MAX_TIMEOUT_S, above=True),
        default=DEFAULTS["timeout"],
        metavar="S",
        help=f"seconds per request, the whole exchange, up to {MAX_TIMEOUT_S:,} (default: 60)",
    )
    group.add_argument(
        "--max-attempts",
        type=int_in(1, MAX_ATTEMPTS),
        default=DEFAULTS["max_attempts"],
        metavar="N",
        help=f"tries per answer, 1 to {MAX_ATTEMPTS} (default: 6)",
    )


def check_models(args: argparse.Namespace) -> None:
    if len(set(args.model)) != len(args.model):
        raise UsageError("--model: a model is named twice")
    if any(not name.strip() for name in args.model):
        raise UsageError("--model: a model name must not be empty")


def params_of(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    if args.json_mode:
        params["response_format"] = {"type": "json_object"}
    return params


def check_prompt(args: argparse.Namespace, template: Template, command: str = "judge") -> None:
    """A reply shape the options contradict is refused; a prompt that does not fence the
    passage off as data (a published one, run as written) is said to be so."""
    from raglabel.judge.prompt_header import FINAL_SCORE

    if args.json_mode and template.header.reply == FINAL_SCORE:
        raise UsageError(
            f"--json-mode: {args.prompt} asks for a final-score reply, not a JSON object;"
            " leave --json-mode out"
        )
    if not template.fenced:
        print(
            f"raglabel {command}: note: {args.prompt} has no {{fence}} lines, so the passages"
            " are not marked off as data; a passage that speaks to the judge may sway it"
            " (the flags still mark such passages)",
            file=sys.stderr,
        )


def run_limits(args: argparse.Namespace, setup: JudgeSetup, command: str = "judge") -> RunLimits:
    """The run's limits from the options, saying first when no API key will be sent."""
    from raglabel.judge.backoff import RetryPolicy
    from raglabel.judge.work import RunLimits

    if setup.api_key() is None:
        print(
            f"raglabel {command}: note: ${args.api_key_env} is not set; sending requests "
            "without an API key (fine for local servers)",
            file=sys.stderr,
        )
    return RunLimits(
        args.concurrency, args.rpm, RetryPolicy(attempts=args.max_attempts), args.timeout
    )
