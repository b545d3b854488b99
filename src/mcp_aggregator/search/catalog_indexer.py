"""Keeps the search index, and the skill classification, in step with discovered tools."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import anyio
from anyio.abc import TaskGroup, TaskStatus

from mcp_aggregator.search.build import build_classifier, build_skill_index
from mcp_aggregator.search.classification_queue import ClassificationQueue
from mcp_aggregator.search.classifier import SkillAssignment
from mcp_aggregator.search.config import SearchSettings
from mcp_aggregator.search.free_heap import free_heap
from mcp_aggregator.search.tool_doc import ToolDoc
from mcp_aggregator.search.tool_search import ToolSearch

logger = logging.getLogger(__name__)

Classified = Callable[[str, tuple[SkillAssignment, ...]], None]
_ASSUMED_TEXTS_PER_SEC = 50.0
"""Until a round was measured: MiniLM on one busy core embeds about this many tool texts a second."""


class CatalogIndexer:
    """Indexes the latest set of tool documents in the background; discovery never waits.

    ``update`` replaces the wanted set and returns at once; the loop embeds what is new,
    drops what left, and queues new tools for classification (BR-004).
    """

    def __init__(
        self,
        settings: SearchSettings,
        search: ToolSearch,
        *,
        on_classified: Classified = lambda _key, _kept: None,
        on_indexed: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.search = search
        self.queue: ClassificationQueue | None = None
        self._on_classified = on_classified
        self._on_indexed = on_indexed
        self._wanted: tuple[ToolDoc, ...] = ()
        self._dirty = anyio.Event()
        self._indexed = anyio.Event()
        self._rate = _ASSUMED_TEXTS_PER_SEC
        self._round_started = (0.0, 0)
        self.embedding: tuple[int, int] | None = None
        """(embedded, total) while new tool texts are being embedded, else None.

        A cold start at 10,000 tools embeds for about a minute and a half on two cores;
        admins see it in ``/state`` and in the log, every tenth of the way."""

    async def start(self, tg: TaskGroup) -> None:
        self.queue = await self._classification_queue()
        if self.queue is not None:
            await tg.start(self.queue.run)
        await tg.start(self._run)

    def update(self, docs: Sequence[ToolDoc]) -> None:
        self._wanted = tuple(docs)
        self._dirty.set()

    def ready(self) -> bool:
        """True when every wanted document is in the index, vectors included."""
        return (
            not self._dirty.is_set()
            and self.search.pending == 0
            and all(doc.key in self.search for doc in self._wanted)
        )

    async def wait_ready(self, timeout_secs: float) -> bool:
        """Waits (up to ``timeout_secs``) until ``ready``; returns whether it is."""
        with anyio.move_on_after(timeout_secs):
            while not self.ready():
                await self._indexed.wait()
        return self.ready()

    def backlog_secs(self) -> float:
        """About how long until ``ready``: the tools still to embed over the embedding rate
        measured last (a guess before the first round)."""
        waiting = self.search.pending + max(0, len(self._wanted) - len(self.search))
        return waiting / self._rate

    def classification_counts(self) -> dict[str, int]:
        return self.queue.counts() if self.queue is not None else {}

    async def _run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._dirty.wait()
            self._dirty = anyio.Event()
            docs = self._wanted
            current = {d.key for d in docs}
            stale = [d.key for d in self.search.docs() if d.key not in current]
            self.search.remove(stale)
            # Only what is new or changed: a start brings servers one by one, and indexing
            # the whole catalogue again for each made a start at fifty servers quadratic.
            changed = [doc for doc in docs if not _unchanged(self.search.get(doc.key), doc)]
            try:
                if changed:
                    await self.search.upsert(changed, progress=self._embedding_progress)
            finally:
                self.embedding = None
            if self.queue is not None:
                self.queue.forget(stale)
                self.queue.submit(sorted(current))
            self._on_indexed()
            self._indexed.set()
            self._indexed = anyio.Event()
            if changed and self.ready():
                # The round's token, activation and batch buffers are free now; without this
                # glibc kept them, and a cold start's peak stayed the process's size.
                await anyio.to_thread.run_sync(lambda: free_heap(collect=False))

    def _embedding_progress(self, done: int, total: int) -> None:
        # Called from the embedding worker thread; plain assignments are atomic.
        before = self.embedding[0] if self.embedding is not None else 0
        now = time.monotonic()
        if before == 0:
            self._round_started = (now, done)
        elif now > self._round_started[0]:
            self._rate = max(1.0, (done - self._round_started[1]) / (now - self._round_started[0]))
        self.embedding = (done, total)
        if done == total or (10 * done) // total > (10 * before) // total:
            logger.info("search index: embedded %d of %d new tool texts", done, total)

    async def _classification_queue(self) -> ClassificationQueue | None:
        settings = self.settings
        if settings.classifier == "embedding" and settings.embedder == "none":
            logger.info("skill classification is off: the embedding classifier needs an embedder")
            return None
        skill_index = build_skill_index(settings, self.search)
        # Building the embedding classifier embeds the skill descriptions: keep it off the loop.
        classifier = await anyio.to_thread.run_sync(build_classifier, settings, skill_index)
        return ClassificationQueue(
            classifier,
            self.search,
            concurrency=settings.classifier_concurrency,
            min_confidence=settings.min_confidence,
            on_classified=self._on_classified,
        )


def _unchanged(old: ToolDoc | None, new: ToolDoc) -> bool:
    """Whether the index holds ``new`` as it is (skills aside: the index keeps those it assigned)."""
    return (
        old is not None
        and (old.server, old.name, old.description, old.server_description)
        == (new.server, new.name, new.description, new.server_description)
        and old.input_schema == new.input_schema
    )
