"""How much history before each run the rules are evaluated over (light: the command line's options read it
without the model)."""

__all__ = ["DEFAULT_HISTORY_MIN", "MAX_HISTORY_MIN"]

# Minutes before the run like its opening minute: the built-in page's 1 h window is pre-filled so (MODEL.md §8);
# a rule's windows up to this long then see a past, as in production. A window longer than the history sees the
# run and the history only (docs/alerts.md measures what that does).
DEFAULT_HISTORY_MIN = 360  # the page's longest window (6 h); a ticket's 3 d window needs --history 4320
MAX_HISTORY_MIN = 3 * 1440
