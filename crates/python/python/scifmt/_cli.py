"""The ``scifmt`` command installed with the wheel (its console-script entry point).

It is the same command as the ``scifmt`` binary built by cargo: the CLI's code is linked into
the extension module and runs there with the arguments given, so the wheel needs no separate
executable and a source install gets the command too. Ctrl-C behaves as for the binary: it ends
the command (``convert`` stops at its next batch and exits with status 130).
"""

import signal
import sys


def main() -> None:
    """Runs ``scifmt`` with ``sys.argv`` and exits with its status."""
    # Python's own SIGINT handler only raises KeyboardInterrupt between bytecodes, which never
    # run while the command does: the default action ends the process, as for the binary.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    from scifmt._scifmt import cli_main

    sys.exit(cli_main(["scifmt", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
