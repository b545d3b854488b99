"""Background skill classification with bounded concurrency and retry of failures."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import anyio
from anyio.abc import TaskStatus

from mcp_aggregator.errors import SearchError
from mcp_aggregator.search.classifier import Classifier, SkillAssignment, select
from mcp_aggregator.search.tool_search import ToolSearch

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class ClassificationState(Enum):
    """Seed 003's tool classification state machine."""

    DISCOVERED = "discovered"
    CLASSIFYING = "classifying"
    CLASSIFIED = "classified"
    UNCLASSIFIED = "unclassified"


class RetryPolicy(Protocol):
    def delay(self, failures: int) -> float:
        """Seconds to wait before the next attempt after ``failures`` failed attempts."""
        ...


@dataclass(frozen=True)
class ExponentialRetry:
    """``base * factor ** (failures - 1)`` seconds, capped at ``cap``; retries forever
    because the usual cause (LLM down, EC-009) ends by itself."""

    base: float = 30.0
    factor: float = 2.0
    cap: float = 900.0

    def delay(self, failures: int) -> float:
        return min(self.cap, self.base * self.factor ** max(0, failures - 1))


@dataclass
class _Entry:
    state: ClassificationState = ClassificationState.DISCOVERED
    failures: int = 0
    due: float = 0.0
    assignments: tuple[SkillAssignment, ...] = ()
    error: str | None = None


class ClassificationQueue:
    """Classifies tools of a ``ToolSearch`` in the background; never blocks discovery.

    ``submit`` is cheap and synchronous. ``run`` (start it with ``await tg.start(queue.run)``)
    classifies with at most ``concurrency`` calls in flight; a failure leaves the tool
    UNCLASSIFIED and searchable, and it is retried after ``retry.delay(failures)`` seconds
    of the injected ``clock``. ``process_due`` does one round without the loop (tests).
    """

    def __init__(
        self,
        classifier: Classifier,
        search: ToolSearch,
        *,
        concurrency: int = 5,
        min_confidence: float = 0.5,
        retry: RetryPolicy | None = None,
        clock: Clock = time.monotonic,
        on_classified: Callable[[str, tuple[SkillAssignment, ...]], None] = lambda _key, _kept: None,
    ) -> None:
        self._classifier = classifier
        self._on_classified = on_classified
        self._search = search
        self._concurrency = concurrency
        self._min_confidence = min_confidence
        self._retry = retry or ExponentialRetry()
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._wake = anyio.Event()
        self._round_done = anyio.Event()

    def submit(self, keys: Iterable[str], *, reclassify: bool = False) -> None:
        """Queues tools for classification (new ones, or all of ``keys`` if ``reclassify``)."""
        for key in keys:
            entry = self._entries.get(key)
            if entry is None or reclassify:
                self._entries[key] = _Entry(due=self._clock())
        self._wake.set()

    def retry_now(self) -> None:
        """Makes every unclassified tool due at once (e.g. the LLM is known to be back)."""
        now = self._clock()
        for entry in self._entries.values():
            if entry.state is ClassificationState.UNCLASSIFIED:
                entry.due = now
        self._wake.set()

    async def wait_settled(self) -> None:
        """Returns once ``run`` has left nothing due now (failures may wait for a retry)."""
        while self._busy():
            await self._round_done.wait()

    def _busy(self) -> bool:
        now = self._clock()
        return any(
            e.state is ClassificationState.CLASSIFYING or (_waiting(e) and e.due <= now) for e in self._entries.values()
        )

    def forget(self, keys: Iterable[str]) -> None:
        """Drops tools that left the catalogue (server removed)."""
        for key in keys:
            self._entries.pop(key, None)

    def state(self, key: str) -> ClassificationState | None:
        entry = self._entries.get(key)
        return entry.state if entry else None

    def is_classified(self, key: str) -> bool:
        return self.state(key) is ClassificationState.CLASSIFIED

    def assignments(self, key: str) -> tuple[SkillAssignment, ...]:
        """Kept skills, primary first; empty until classified."""
        entry = self._entries.get(key)
        return entry.assignments if entry else ()

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in ClassificationState}
        for entry in self._entries.values():
            out[entry.state.value] += 1
        return out

    def next_due(self) -> float | None:
        dues = [e.due for e in self._entries.values() if _waiting(e)]
        return min(dues) if dues else None

    async def process_due(self) -> int:
        """Classifies every tool due now; returns how many were attempted."""
        now = self._clock()
        due = [k for k, e in self._entries.items() if _waiting(e) and e.due <= now]
        unfit: list[str] = []
        for key in due:
            self._entries[key].state = ClassificationState.CLASSIFYING
        todo = iter(due)

        async def worker() -> None:
            # ``concurrency`` workers over one list rather than a task per tool: a start
            # queues thousands, and as many tasks waiting on one limiter cost the loop more
            # than the classifications themselves.
            for key in todo:
                await self._classify_one(key, unfit)
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            for _ in range(min(self._concurrency, len(due))):
                tg.start_soon(worker)
        if unfit:
            # One line per round at INFO; the tools themselves at DEBUG (a start with
            # thousands of tools would otherwise write thousands of lines).
            log.info(
                "classified %d tools: %d fit no skill above confidence %.2f",
                len(due),
                len(unfit),
                self._min_confidence,
            )
        return len(due)

    async def _classify_one(self, key: str, unfit: list[str]) -> None:
        entry = self._entries.get(key)
        doc = self._search.get(key)
        if entry is None or doc is None:
            self._entries.pop(key, None)
            return
        try:
            kept = select(await self._classifier.classify(doc), self._min_confidence)
        except SearchError as exc:
            self._fail(key, entry, str(exc))
            return
        if not kept:
            # A tool that fits no skill well enough is an answer, not a failure: retrying
            # would only ask the same question again.
            log.debug("%s fits no skill above confidence %.2f", key, self._min_confidence)
            unfit.append(key)
        entry.state = ClassificationState.CLASSIFIED
        entry.assignments = tuple(kept)
        entry.error = None
        self._search.set_skills(key, [a.skill_id for a in kept])
        self._on_classified(key, entry.assignments)

    def _fail(self, key: str, entry: _Entry, error: str) -> None:
        entry.failures += 1
        entry.state = ClassificationState.UNCLASSIFIED
        entry.error = error
        entry.due = self._clock() + self._retry.delay(entry.failures)
        log.warning(
            "classification of %s failed (%d times), retry in %.0fs: %s",
            key,
            entry.failures,
            entry.due - self._clock(),
            error,
        )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loops forever: classifies what is due, then waits for new work or the next retry."""
        task_status.started()
        while True:
            self._wake = anyio.Event()
            await self.process_due()
            done, self._round_done = self._round_done, anyio.Event()
            done.set()
            due = self.next_due()
            wait = math.inf if due is None else max(0.0, due - self._clock())
            with anyio.move_on_after(wait):
                await self._wake.wait()


def _waiting(entry: _Entry) -> bool:
    return entry.state in (ClassificationState.DISCOVERED, ClassificationState.UNCLASSIFIED)
