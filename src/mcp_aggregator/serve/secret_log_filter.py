"""``SecretLogFilter``: every log line passes the gateway's secret scrubber before it is written."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_FORMATTER = logging.Formatter()
_PARAMETER_LOGGERS = ("aiosqlite",)
"""Their debug lines quote SQL parameters, registrations included, before any server exists
whose secrets the scrubber could know: dropped rather than scrubbed."""


class SecretLogFilter(logging.Filter):
    """Rewrites a record's message (and traceback text) with ``scrub``; drops only the SQL
    driver's debug lines (``_PARAMETER_LOGGERS``).

    Installed on handlers rather than loggers: a logger's filter sees only records logged on
    that very logger, while a handler's sees every record that reaches it, the SDK's,
    httpx's and uvicorn's included.
    """

    def __init__(self, scrub: Callable[[str], str]) -> None:
        super().__init__()
        self.scrub = scrub

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(_PARAMETER_LOGGERS) and record.levelno < logging.INFO:
            return False
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        return True


@contextmanager
def scrubbed_logs(scrub: Callable[[str], str]) -> Iterator[SecretLogFilter]:
    """Install a ``SecretLogFilter`` on every handler configured now; remove it on exit."""
    log_filter = SecretLogFilter(scrub)
    loggers = [
        logging.getLogger(),
        *(logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)),
    ]
    handlers = {id(h): h for logger in loggers for h in logger.handlers}.values()
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield log_filter
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)
