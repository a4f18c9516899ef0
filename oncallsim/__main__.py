"""``python -m oncallsim`` = the ``oncallsim`` command."""

from oncallsim.cli import main

if __name__ == "__main__":
    main()
