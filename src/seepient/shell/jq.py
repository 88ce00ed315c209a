"""jq: which words are its filter, the variables it is given (``--arg NAME VALUE`` takes two words) and the
files it reads: inputs, the filter file of ``-f``, ``--slurpfile``/``--rawfile`` files and ``-L`` module folders."""

from __future__ import annotations

from collections.abc import Sequence

from seepient.shell.interpretation import Interpretation, Word

# Options followed by a variable's name and its value; True where the value names a file jq reads.
_PAIRS = {"--arg": False, "--argjson": False, "--slurpfile": True, "--rawfile": True}
_LIBRARY = ("-L", "--library-path")
# After these, the words that follow the filter are strings for $ARGS, not input files.
_POSITIONAL_ARGUMENTS = ("--args", "--jsonargs")


def jq_operands(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    positional: list[tuple[Word, bool]] = []
    from_file = False
    arguments = False
    options_done = False
    words = iter(args)
    for word in words:
        text = word.text
        if options_done or not word.static or not text.startswith("-") or text == "-":
            positional.append((word, arguments))
            continue
        if text == "--":
            options_done = True
        elif text in _PAIRS:
            next(words, None)  # the variable's name, never a file
            value = next(words, None)
            if value is not None and _PAIRS[text]:
                interpretation.opens(value, write=False, role=f"{program} {text} file")
        elif text in _LIBRARY or text.startswith("-L"):
            folder = next(words, None) if text in _LIBRARY else Word(text[2:], word.static)  # or glued: -Ldir
            if folder is not None:
                interpretation.opens(folder, write=False, role=f"{program} module folder", recursive=True)
        elif text == "--indent":
            next(words, None)
        elif text in _POSITIONAL_ARGUMENTS:
            arguments = True
        elif text == "--from-file" or (not text.startswith("--") and "f" in text):
            # jq reads its filter from the first word that is not an option ('-f prog.jq' and '-nf prog.jq').
            from_file = True
    if not positional:
        return
    first, *rest = positional
    if from_file or not first[0].static:
        # A filter computed at run time may be split into options that name files ('--rawfile a FILE').
        interpretation.opens(first[0], write=False, role=f"{program} filter file")
    for word, is_argument in rest:
        if not is_argument:
            interpretation.opens(word, write=False, role=f"{program} input")
