"""``capc reply STAGE MODEL FILE``: validate a saved response against the compiled request.

FILE is a saved OpenRouter chat-completions response: the JSON object, a JSON list of
stream chunks, or a stream dump (``data:`` lines); ``-`` reads stdin. The output (or the
value-free validation errors), the endpoint check, usage and cost are printed; ``--json``
gives one object (``outcome``: ``invalid``, ``truncated``, ``refused`` or ``filtered``
when there is no valid output; ``error``, with ``kind`` and ``status``, for a response
that is a provider error, which also exits 2). ``--attempt N`` is 0-based, as
``parse_response(attempt=N)`` and ``req.plan[N]``. Exit codes: 0 the reply is valid,
1 there is no valid output (a contract violation, ``finish_reason: length`` without a
whole answer, a refusal, a content filter), 2 an error (unreadable file, a response that
is an error or has ``finish_reason: error``, bad input, an ambiguous ``--attempt``).
"""

from __future__ import annotations

import argparse
from typing import Any

from compiler.cli.common import (
    EXIT_FAILED,
    EXIT_INPUT,
    EXIT_OK,
    CliError,
    Handler,
    add_common_options,
    add_route_options,
    error_payload,
    load_registry,
    print_error,
    print_json,
    print_note,
    print_stderr,
)

__all__ = ["register"]


def register(sub: Any) -> dict[str, Handler]:
    """Add the ``reply`` subcommand to ``sub``."""
    reply = sub.add_parser(
        "reply",
        epilog="example: capc reply extract_invoice openai/gpt-4o-mini response.json --json",
        help="validate a saved response for STAGE and MODEL: output or errors, usage, cost",
        description="Compile STAGE for MODEL, then read FILE (a chat-completions response: "
        "JSON, a JSON list of stream chunks, or a stream dump of data: lines; - for stdin) "
        "as the reply to it: print the validated output or the validation errors (JSON "
        "paths, never values), the endpoint check, usage and cost. Exit 0 valid, 1 "
        "no valid output (invalid, truncated, refused, filtered), 2 error.",
    )
    reply.add_argument("stage", metavar="STAGE")
    reply.add_argument("model", metavar="MODEL")
    reply.add_argument("file", metavar="FILE")
    reply.add_argument("--attempt", type=int, default=0, metavar="N",
                       help="the route-plan attempt that was sent, 0-based as in the API's "
                       "parse_response(attempt=N) and req.plan[N] (0 = the first; default 0)")
    add_common_options(reply)
    add_route_options(reply)
    return {"reply": _cmd_reply}


def _read(spec: str) -> Any:
    from compiler.cli.inputs import MAX_MESSAGES_BYTES, read_input_text
    from compiler.reply.response import load_response_text
    from registry.boundedread import STDIN_NAME

    shown = STDIN_NAME if spec == "-" else spec
    try:  # bounded (64 MiB), read once: /dev/zero ends, a pipe works
        text = read_input_text(spec, MAX_MESSAGES_BYTES, "response")
    except FileNotFoundError:  # worded as every other command's missing file
        raise CliError(f"{shown}: no such file", EXIT_INPUT) from None
    except IsADirectoryError:
        raise CliError(f"{shown}: is a directory; expected a saved response", EXIT_INPUT) from None
    except OSError as exc:
        raise CliError(f"{shown}: cannot read: {exc.strerror or exc}", EXIT_INPUT) from None
    except UnicodeDecodeError as exc:
        raise CliError(f"{shown}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})",
                       EXIT_INPUT) from None  # fmt: skip
    try:
        return load_response_text(text)
    except ValueError as exc:
        raise CliError(f"{shown}: {exc}", EXIT_INPUT) from None


def _cost_line(cost: Any) -> str:
    usd = cost.usd
    text = "unknown" if usd is None else f"{usd.normalize():f} USD"
    if cost.reported_usd is not None:
        text += f" (OpenRouter reports {cost.reported_usd.normalize():f} USD)"
    return f"cost: {text}; prices: {cost.source}"


def _attempt(given: int, compiled: Any, response: Any) -> int:
    """The 0-based attempt ``--attempt`` names. Before 2026-12 the flag was 1-based; a
    number only that form can mean (the plan's length) is read so, with a note; a number
    both forms can mean is read 0-based unless the response's provider belongs to the
    attempt the 1-based form meant and not to the other, which is refused as ambiguous.

    Raises:
        CliError: out of range, or ambiguous (exit 2).
    """
    from compiler.reply.outcome import serving_attempts
    from compiler.reply.response import assemble

    plan = compiled.plan
    count = len(plan)
    if not 0 <= given <= count:
        raise CliError(f"--attempt {given}: the plan has {count} attempt(s), numbered 0 to "
                       f"{count - 1} (0-based, as parse_response(attempt=N)); see capc "
                       "routes", EXIT_INPUT)
    if given == count:
        print_note(f"--attempt {given} read as the old 1-based form (attempt "
                   f"{given - 1}, the last); --attempt is 0-based: pass --attempt {given - 1}")
        return given - 1
    if given == 0:
        return 0
    try:
        provider = assemble(response).provider
    except ValueError:
        return given
    book = None if compiled.origin is None else compiled.origin.prices()
    served = serving_attempts(provider, [a.endpoints for a in plan], book)
    if given - 1 in served and given not in served:
        raise CliError(
            f"--attempt {given} is ambiguous: 0-based it is the attempt for "
            f"{', '.join(plan[given].endpoints) or 'no endpoint data'}, but the response "
            f"was served by {provider!r}, an endpoint of attempt {given - 1} (which "
            f"--attempt {given} meant when the flag was 1-based); pass --attempt "
            f"{given - 1} for that one", EXIT_INPUT)
    return given


def _cmd_reply(args: argparse.Namespace) -> int:
    from compiler.errors import (
        ProviderError,
        ReplyBlockedError,
        ReplyTruncatedError,
        ReplyValidationError,
    )
    from compiler.request import compile_request

    response = _read(args.file)
    registry = load_registry(args)
    compiled = compile_request(args.stage, args.model, registry=registry, coverage=args.coverage)
    attempt = _attempt(args.attempt, compiled, response)
    try:
        parsed = compiled.parse_response(response, attempt=attempt)
    except ValueError as exc:
        raise CliError(f"{'stdin' if args.file == '-' else args.file}: {exc}", EXIT_INPUT) from None
    except ProviderError as exc:  # the saved response is an error, not a reply
        failure = CliError(str(exc), EXIT_INPUT, kind=f"provider_{exc.kind}")
        if not args.json:
            raise failure from None
        # one object on stdout (the reply's shape and the error's), the line on stderr
        print_json({"valid": False, "outcome": "error", "kind": exc.kind,
                          "status": exc.status, "detail": exc.detail, "errors": [
                              {"path": "$", "message": str(exc)}],
                          "usage": None if exc.usage is None else exc.usage.to_dict(),
                          "cost": None if exc.cost is None else exc.cost.to_dict(),
                          **error_payload(failure, EXIT_INPUT)}, ensure_ascii=True)
        print_error(str(failure))
        return EXIT_INPUT
    except (ReplyValidationError, ReplyTruncatedError, ReplyBlockedError) as exc:
        errors = exc.errors if isinstance(exc, ReplyValidationError) else [("$", str(exc))]
        outcome = ("invalid" if isinstance(exc, ReplyValidationError) else "truncated"
                   if isinstance(exc, ReplyTruncatedError) else exc.reason)
        if args.json:
            print_json({"valid": False, "outcome": outcome, "errors": [
                {"path": p, "message": m} for p, m in errors],
                "usage": None if exc.usage is None else exc.usage.to_dict(),
                "cost": None if exc.cost is None else exc.cost.to_dict()}, ensure_ascii=True)
        else:
            print(f"{outcome} reply:" if outcome != "invalid" else "invalid reply:")
            for path, message in errors:
                print(f"  {path}: {message}")
            if exc.cost is not None:
                print(_cost_line(exc.cost))
        return EXIT_FAILED
    if args.json:
        print_json({"valid": True, **parsed.to_dict()})
        return EXIT_OK
    print_json(parsed.to_dict()["output"])
    usage = parsed.usage
    print_stderr(f"finish_reason: {parsed.finish_reason}; provider: {parsed.provider} "
          f"(endpoint check: {parsed.endpoint_check}"
          + (f": {parsed.endpoint_note}" if parsed.endpoint_note else "") + ")")
    print_stderr(f"usage: input {usage.input_tokens} (cache read {usage.cache_read_tokens}, cache "
          f"write {usage.cache_write_tokens}), output {usage.output_tokens} (reasoning "
          f"{usage.reasoning_tokens}) tokens")
    print_stderr(_cost_line(parsed.cost))
    for note in parsed.cost.notes:
        print_note(note)
    return EXIT_OK
