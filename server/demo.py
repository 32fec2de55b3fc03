"""Three demo agents that behave like coding agents, talking to a control plane over HTTP (harness API).

Each agent works through tasks. A task is a handful of model steps: the agent streams its narration
(``model.delta`` chunks, then ``model.step`` phase ``commentary``, with the call's tokens and cost as
``usage``: list prices of a real model, the context growing through the task), calls tools (Read / Grep /
Edit / Bash with realistic arguments and durations), sometimes asks for approval, saying why and which of
its permission rules asks (``reasoning``, ``rule``), and waits for the human (a decline makes it change
plan, and it says so), writes a final answer (deltas, ``model.step`` ``final_answer``,
``run.completed``) and takes the next task. At every turn boundary it claims operator notes the way a
real harness hook does (channel ``hook``, event ``pre_tool_use``, or ``stop`` before the final answer) and
its next narration starts with "Operator note received: …", then it follows the note. The migrator ends its
session after two tasks and comes back later as a new session ("… (shift 2)", "… (shift 3)").

An approval waits minutes for a person (:attr:`AgentSpec.patience`: long enough for a newcomer to find it
and read it), then expires and the agent takes the safer path, saying why; one agent at a time waits on
the operator, the others do side work meanwhile. A demo started again on the same database carries on
where the last one stopped (:func:`resume_points`): each agent goes on in the session it left open (the
task it was in the middle of started again, its notes still waiting for it) and its next session goes on
with the next number.

``pace`` is a speed factor (2.0 = twice as fast; tests use 50+); ``seed`` makes every choice repeatable.

    handle = start_demo_agents(server.url, server.token, pace=1.0, seed=7)   # own thread and loop
    ...
    handle.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx

from server.accounts import insert_token, new_token
from server.harness import RuntimeTokenResponse
from server.harness_client import HarnessClient, HarnessError, HarnessSession
from server.store import now_utc, ts


@dataclass(frozen=True)
class Tool:
    """One tool call of a scripted step (with an alternative for when a human declines)."""

    name: str
    args: dict[str, Any]
    seconds: float
    result: str
    approval: bool = False
    reasoning: str | None = None
    rule: str | None = None  # the permission rule that asks for approval (shown to the operator)
    fallback: Tool | None = None  # what the agent does instead when a human declines


@dataclass(frozen=True)
class Step:
    """One model step: narration, then tool calls."""

    narration: str
    tools: tuple[Tool, ...] = ()


@dataclass(frozen=True)
class Task:
    """One run: steps and the final answer."""

    title: str
    steps: tuple[Step, ...]
    answer: str


@dataclass(frozen=True)
class Model:
    """A model the demo agents report usage for, with list prices in USD per million tokens."""

    name: str
    input_per_million: float
    output_per_million: float

    def usage(self, context: int, text: str, tools: int, rng: random.Random) -> dict[str, Any]:
        """One call's usage as an agent reports it: the context read so far plus this step's prompt in,
        the narration and tool calls out (about four characters a token), and what that costs."""
        input_tokens = context + rng.randint(900, 2400)
        output_tokens = max(len(text) // 4, 12) + 70 * tools + rng.randint(0, 40)
        cost = (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1e6
        return {
            "model": self.name,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": round(cost, 6),
        }


SONNET = Model("claude-sonnet-4.5", 3.0, 15.0)
CODEX = Model("gpt-5-codex", 1.25, 10.0)


@dataclass(frozen=True)
class AgentSpec:
    """Who the agent is and what it works on."""

    name: str
    kind: str
    cwd: str
    tasks: tuple[Task, ...]
    end_after: int | None = None  # end the session after this many tasks, then start a new one
    patience: float = 180.0  # seconds (at pace 1) an approval waits for a human before it expires
    start_delay: float = 0.0  # seconds (at pace 1) before the first session, so the agents are out of step
    model: Model | None = None  # the model the agent reports its calls' usage for


def _read(path: str, lines: int, seconds: float = 0.3) -> Tool:
    return Tool("Read", {"file_path": path}, seconds, f"{lines} lines")


def _grep(pattern: str, path: str, hits: int) -> Tool:
    return Tool("Grep", {"pattern": pattern, "path": path}, 0.4, f"{hits} matches")


def _edit(path: str, old: str, new: str) -> Tool:
    return Tool("Edit", {"file_path": path, "old_string": old, "new_string": new}, 0.5, "1 replacement")


def _bash(command: str, seconds: float, result: str, **kw: Any) -> Tool:
    return Tool("Bash", {"command": command}, seconds, result, **kw)


BUILDER = AgentSpec(
    name="builder",
    kind="claude_code",
    cwd="/home/dev/shop-api",
    model=SONNET,
    tasks=(
        Task(
            "Fix the failing checkout test",
            (
                Step(
                    "The CI run says test_checkout_applies_discount fails. I'll read the test and the "
                    "discount module to see what changed.",
                    (_read("tests/test_checkout.py", 184), _read("shop/discounts.py", 96)),
                ),
                Step(
                    "The discount is applied after tax instead of before. Let me find every caller of "
                    "apply_discount before changing the order.",
                    (_grep("apply_discount\\(", "shop/", 3),),
                ),
                Step(
                    "Only checkout.py calls it. I'll move the discount ahead of the tax step and rerun the "
                    "checkout tests.",
                    (
                        _edit(
                            "shop/checkout.py",
                            "total = tax(subtotal)",
                            "total = tax(apply_discount(subtotal))",
                        ),
                        _bash("pytest -q tests/test_checkout.py", 2.2, "14 passed in 1.9s"),
                    ),
                ),
            ),
            "Fixed: `checkout.py` applied the discount after tax. It now discounts the subtotal first; "
            "`tests/test_checkout.py` passes (14 tests).",
        ),
        Task(
            "Publish the hotfix",
            (
                Step(
                    "The fix is committed locally. Running the whole suite once before pushing.",
                    (_bash("pytest -q", 3.0, "212 passed in 8.4s"),),
                ),
                Step(
                    "All green. Pushing the branch needs a human yes, so I'm asking for approval.",
                    (
                        _bash(
                            "git push origin hotfix/discount-order",
                            1.2,
                            "pushed 1 commit",
                            approval=True,
                            reasoning="Publish the discount fix so the release can be cut.",
                            rule="git push needs a human",
                            fallback=_bash(
                                "git format-patch -1 -o /tmp/patches", 0.4, "/tmp/patches/0001.patch"
                            ),
                        ),
                    ),
                ),
            ),
            "The hotfix is ready; the full suite passes (212 tests).",
        ),
        Task(
            "Speed up the product search endpoint",
            (
                Step(
                    "Profiling the search endpoint first so I change the right thing.",
                    (
                        _bash(
                            "python -m cProfile -s cumtime scripts/search_bench.py",
                            2.5,
                            "87% in Product.tags",
                        ),
                    ),
                ),
                Step(
                    "Most time goes to loading tags one product at a time. I'll add a prefetch.",
                    (
                        _read("shop/search.py", 143),
                        _edit(
                            "shop/search.py",
                            "Product.objects.filter(q)",
                            "Product.objects.filter(q).prefetch_related('tags')",
                        ),
                        _bash("python scripts/search_bench.py", 1.6, "p50 38 ms (was 212 ms)"),
                    ),
                ),
            ),
            "Search p50 went from 212 ms to 38 ms by prefetching product tags in `shop/search.py`.",
        ),
    ),
)

REVIEWER = AgentSpec(
    name="reviewer",
    kind="codex",
    cwd="/home/dev/web-frontend",
    model=CODEX,
    patience=240.0,
    start_delay=9.0,
    tasks=(
        Task(
            "Review PR #482: dark mode toggle",
            (
                Step(
                    "Reading the diff of PR #482 and the theme provider it touches.",
                    (
                        _bash("gh pr diff 482", 0.9, "+214 -37 in 6 files"),
                        _read("src/theme/ThemeProvider.tsx", 88),
                    ),
                ),
                Step(
                    "The toggle stores the theme in localStorage but never reads prefers-color-scheme. "
                    "Checking whether other components assume a default.",
                    (_grep("useTheme\\(", "src/", 11),),
                ),
                Step(
                    "Running the component tests to see if the new default breaks snapshots.",
                    (_bash("npm test -- --watch=false src/theme", 2.8, "2 snapshots obsolete, 31 passed"),),
                ),
            ),
            "Review for #482: works, but it ignores `prefers-color-scheme` on first load and leaves two "
            "obsolete snapshots. Requested changes with a suggested fix.",
        ),
        Task(
            "Clean the build output",
            (
                Step(
                    "The dist folder has stale chunks from an old bundler config. "
                    "Removing it needs approval.",
                    (
                        _bash(
                            "rm -rf dist/",
                            0.3,
                            "removed dist/",
                            approval=True,
                            reasoning="Stale chunks from the old bundler config are being served.",
                            rule="recursive delete",
                            fallback=_bash(
                                "npm run build -- --emptyOutDir=false", 2.0, "built in 4.1s (kept old files)"
                            ),
                        ),
                    ),
                ),
                Step(
                    "Rebuilding to confirm the output is clean.",
                    (_bash("npm run build", 2.4, "built in 4.3s"),),
                ),
            ),
            "Build output regenerated; the bundle is 412 kB.",
        ),
    ),
)

MIGRATOR = AgentSpec(
    name="migrator",
    kind="claude_code",
    cwd="/home/dev/billing",
    model=SONNET,
    end_after=2,
    patience=150.0,
    start_delay=4.0,
    tasks=(
        Task(
            "Add an index for invoice lookups",
            (
                Step(
                    "Invoice lookups by customer are slow. Reading the model and the latest migration.",
                    (
                        _read("billing/models.py", 231),
                        _bash("ls migrations/versions | tail -3", 0.2, "3 files"),
                    ),
                ),
                Step(
                    "Writing a migration that adds an index on invoices(customer_id, issued_at).",
                    (
                        Tool(
                            "Write",
                            {"file_path": "migrations/versions/0042_invoice_customer_idx.py"},
                            0.6,
                            "created",
                        ),
                    ),
                ),
                Step(
                    "Applying it to the staging database requires approval.",
                    (
                        _bash(
                            "alembic upgrade head",
                            1.8,
                            "0041 -> 0042",
                            approval=True,
                            reasoning="Apply the new index to staging.",
                            rule="database migrations",
                            fallback=_bash(
                                "alembic upgrade head --sql > /tmp/0042.sql",
                                0.5,
                                "SQL written to /tmp/0042.sql",
                            ),
                        ),
                    ),
                ),
            ),
            "Migration 0042 adds `ix_invoices_customer_issued`; lookups by customer should use it.",
        ),
        Task(
            "Reconcile last month's refunds",
            (
                Step(
                    "Pulling refunds without a matching credit note.",
                    (
                        _bash(
                            "python scripts/refunds.py --month 2026-10 --unmatched",
                            2.1,
                            "7 unmatched refunds",
                        ),
                    ),
                ),
                Step(
                    "Seven refunds lack credit notes; grouping them by cause.",
                    (_grep("refund_reason", "billing/", 5),),
                ),
            ),
            "7 refunds in October had no credit note: 5 from the duplicate-charge bug, 2 manual. "
            "Report attached.",
        ),
    ),
)

SPECS = (BUILDER, REVIEWER, MIGRATOR)

SIDE_WORK = (
    _bash("git status --short", 0.6, "2 files changed"),
    _bash("ruff check .", 1.4, "All checks passed!"),
    _grep("TODO", ".", 4),
    _bash("git log --oneline -5", 0.5, "5 commits"),
)
"""Cheap work an agent does while another agent's approval is waiting, rather than queue a second one."""

SIDE_BREAK = 8.0
"""Seconds (at pace 1) between two rounds of side work while another agent's approval waits."""

MIN_PATIENCE = 3.0
"""However fast the pace, an approval stays open this long (real seconds), so a person or a test can act."""

RESUMED_REASON = "the demo stopped in the middle of this task; starting it again"
"""Why the run a stopped demo cut off is cancelled when the demo starts again (its task starts over)."""

NOT_RUN = "the demo stopped before this call ran"
"""The comment on an approval a stopped demo left waiting: nobody waits for its answer any more."""

_SHIFT = re.compile(r" \(shift (\d+)\)$")


@dataclass(frozen=True)
class Resume:
    """Where an agent of a stopped demo was: the number of its newest session (1 for the first, "(shift
    N)" after) and, when that session is still open, a runtime token minted for it, how many tasks it
    finished there, its newest step number and the run the stop cut off (None: it was between tasks)."""

    generation: int
    session: RuntimeTokenResponse | None = None
    tasks_done: int = 0
    iteration: int = 0
    interrupted: str | None = None


def _chunks(text: str, rng: random.Random) -> list[str]:
    words = text.split(" ")
    out: list[str] = []
    i = 0
    while i < len(words):
        n = rng.randint(2, 4)
        out.append(" ".join(words[i : i + n]) + (" " if i + n < len(words) else ""))
        i += n
    return out


@dataclass
class _State:
    notes: list[str] = field(default_factory=list)
    declined: list[str] = field(default_factory=list)


class DemoAgent:
    """One agent's loop: sessions, tasks, steps, notes and approvals."""

    def __init__(
        self,
        harness: HarnessClient,
        spec: AgentSpec,
        *,
        pace: float,
        rng: random.Random,
        desk: asyncio.Lock | None = None,
        resume: Resume | None = None,
    ) -> None:
        self.harness = harness
        self.spec = spec
        self.pace = pace
        self.rng = rng
        self.desk = desk  # shared by the agents: one approval waits on the operator at a time
        self.resume = resume
        self.generation = resume.generation if resume is not None else 0
        """The number of the agent's current session (1, then "(shift 2)"...)."""
        self.context = 0  # tokens the model reads at its next call (grows through a task)

    def _usage(self, text: str, tools: int) -> dict[str, Any] | None:
        """The usage of the model call that wrote ``text`` (None for an agent without a model); the
        context grows by what the call wrote and by each tool's result."""
        model = self.spec.model
        if model is None:
            return None
        usage = model.usage(self.context, text, tools, self.rng)
        self.context = int(usage["input_tokens"]) + int(usage["output_tokens"]) + 350 * tools
        return usage

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds * self.rng.uniform(0.7, 1.3) / self.pace)

    @property
    def patience(self) -> float:
        """Real seconds an approval of this agent waits for a human (the demo's policy), then expires."""
        return max(MIN_PATIENCE, self.spec.patience / self.pace)

    def title(self, generation: int) -> str:
        """The title of the agent's session number ``generation``."""
        first = self.spec.tasks[0].title
        return first if generation <= 1 else f"{first} (shift {generation})"

    async def run(self) -> None:
        """Work forever (until cancelled): one session, its tasks, and a new session when one ends; first
        the session a stopped demo left open, when there is one (:class:`Resume`)."""
        resume, self.resume = self.resume, None
        if self.spec.start_delay and resume is None:
            await asyncio.sleep(self.spec.start_delay / self.pace)
        tasks = self.spec.tasks
        while True:
            if resume is not None and resume.session is not None:
                session = self.harness.session(resume.session)
                done, iteration = resume.tasks_done, resume.iteration
                if resume.interrupted is not None:
                    session.run_id = resume.interrupted
                    await session.run_cancelled(RESUMED_REASON)
            else:
                self.generation += 1
                session = await self.harness.start_session(
                    agent_name=self.spec.name,
                    agent_kind=self.spec.kind,
                    cwd=self.spec.cwd,
                    title=self.title(self.generation),
                )
                done = iteration = 0
            resume = None
            while True:
                iteration = await self._task(session, tasks[done % len(tasks)], iteration)
                done += 1
                if self.spec.end_after is not None and done >= self.spec.end_after:
                    await self._sleep(1.5)
                    await session.end("finished its shift")
                    break
                await self._sleep(2.5)
            await self._sleep(8.0)

    async def _claim(self, session: HarnessSession, iteration: int, *, finishing: bool) -> list[str]:
        """Pick up notes as a Claude Code harness does, from a hook: ``pre_tool_use`` before the step's
        tool calls (Preloop records exactly that), ``stop`` when the agent is about to give its answer.
        The turn index lets the operator see which step the note reached."""
        event = "stop" if finishing else "pre_tool_use"
        pending = await session.claim_notes(channel="hook", event=event, turn_index=iteration)
        return [n.envelope.get("parts", [{}])[0].get("text", "") or n.text for n in pending.notes]

    async def _say(self, session: HarnessSession, iteration: int, text: str, tools: int) -> None:
        for chunk in _chunks(text, self.rng):
            await session.delta(chunk, iteration)
            await self._sleep(0.06)
        await session.step(iteration, "commentary", text, tool_calls=tools, usage=self._usage(text, tools))

    async def _task(self, session: HarnessSession, task: Task, iteration: int) -> int:
        """One run. Notes are claimed at every turn boundary, including the last one: notes that arrive
        while the agent is finishing get their own step (narrated and acted on) before the answer."""
        state = _State()
        self.context = 4_000  # the system prompt and the task
        await session.run_started(task.title)
        steps = list(task.steps)
        while True:
            iteration += 1
            notes = await self._claim(session, iteration, finishing=not steps)
            state.notes.extend(notes)
            if not steps and not notes:
                break
            step = steps.pop(0) if steps else Step("Then I'll wrap up.")
            narration, tools = step.narration, step.tools
            if notes:
                quoted = "; ".join(f"“{n}”" for n in notes)
                plan, extra, stop = _follow(notes, web="frontend" in self.spec.cwd)
                if stop:
                    await self._say(session, iteration, f"Operator note received: {quoted} — {plan}.", 0)
                    await session.run_cancelled(f"stopped at the operator's request: {notes[-1]}")
                    return iteration
                narration = f"Operator note received: {quoted} — switching to {plan}. {narration}"
                tools = (*extra, *tools)
            await self._say(session, iteration, narration, len(tools))
            for tool in tools:
                iteration = await self._tool(session, iteration, tool, state)
        answer = task.answer
        if state.declined:
            answer += f" Note: {state.declined[-1]}, so I took the safer path instead."
        if state.notes:
            answer += " Operator notes followed: " + "; ".join(f"“{n}”" for n in state.notes) + "."
        await session.final_answer(
            iteration, answer, chunks=_chunks(answer, self.rng), usage=self._usage(answer, 0)
        )
        return iteration

    async def _tool(self, session: HarnessSession, iteration: int, tool: Tool, state: _State) -> int:
        if tool.approval and self.desk is not None:
            # Another agent already waits on the operator: keep busy instead of piling a second
            # approval on (an operator can answer one at a time; the list stays lively), for as long as
            # that approval waits (minutes), a round of side work every few seconds.
            rounds = 0
            while self.desk.locked():
                if rounds:
                    await self._sleep(SIDE_BREAK)
                    if not self.desk.locked():
                        break
                side = self.rng.choice(SIDE_WORK)
                iteration += 1
                said = (
                    "Another agent is waiting on an approval; doing side work "
                    f"(`{_describe(side)}`) before I ask for mine."
                    if not rounds
                    else f"Still waiting for my turn to ask; meanwhile `{_describe(side)}`."
                )
                await self._say(session, iteration, said, 1)
                await self._run(session, iteration, side)
                rounds += 1
            async with self.desk:
                return await self._decide(session, iteration, tool, state)
        return await self._decide(session, iteration, tool, state)

    async def _decide(self, session: HarnessSession, iteration: int, tool: Tool, state: _State) -> int:
        """Run ``tool``, first asking for approval when it needs one (the fallback when refused)."""
        if tool.approval:
            # The demo never stalls on a person who is not there: unanswered, the approval expires after
            # the agent's patience and it takes the safer path, saying why.
            verdict = await session.permission_check(
                tool.name,
                tool.args,
                reasoning=tool.reasoning,
                rule=tool.rule,
                cwd=self.spec.cwd,
                timeout_seconds=round(self.patience, 1),
            )
            if verdict.decision == "deny":
                command = tool.args.get("command", tool.name)
                if verdict.timed_out:
                    why = f"nobody answered within {self.patience:.0f}s, the demo's limit"
                    state.declined.append(f"the approval for `{command}` expired ({why})")
                else:
                    why = verdict.reason or "no reason given"
                    state.declined.append(f"the operator declined `{command}` ({why})")
                call = await session.tool_started(tool.name, tool.args, iteration=iteration)
                await session.tool_completed(
                    call, tool.name, status="denied", duration_ms=0, result_summary=why
                )
                if tool.fallback is not None:
                    alternative = _describe(tool.fallback)
                    outcome = "expired" if verdict.timed_out else "declined"
                    text = f"Approval {outcome} ({why}). Changing plan: running `{alternative}` instead."
                    iteration += 1
                    await self._say(session, iteration, text, 1)
                    await self._run(session, iteration, tool.fallback)
                return iteration
        await self._run(session, iteration, tool)
        return iteration

    async def _run(self, session: HarnessSession, iteration: int, tool: Tool) -> None:
        call = await session.tool_started(tool.name, tool.args, iteration=iteration)
        started = asyncio.get_running_loop().time()
        await self._sleep(tool.seconds)
        elapsed = int((asyncio.get_running_loop().time() - started) * 1000 * self.pace)
        await session.tool_completed(call, tool.name, duration_ms=elapsed, result_summary=tool.result)


def _follow(notes: list[str], *, web: bool = False) -> tuple[str, list[Tool], bool]:
    """How the agent acts on notes: ``(what it says it will do, extra tool calls, stop the task)``."""
    text = " ".join(notes).lower()
    if any(word in text for word in ("stop", "abort", "halt", "pause")):
        return "stopping this task now", [], True
    extra: list[Tool] = []
    plans: list[str] = []
    if "test" in text:
        extra.append(
            _bash("npm test -- --watch=false", 2.6, "33 passed")
            if web
            else _bash("pytest -q", 2.0, "212 passed in 8.2s")
        )
        plans.append("running the tests first")
    if "lint" in text or "ruff" in text:
        extra.append(
            _bash("npm run lint", 1.1, "0 problems")
            if web
            else _bash("ruff check .", 0.8, "All checks passed!")
        )
        plans.append("running the linter first")
    if "staging" in text:
        extra.append(_grep("DATABASE_URL", ".env.staging", 1))
        plans.append("pointing at the staging database")
    if not plans:
        plans.append("doing what it asks first")
    return " and ".join(plans), extra, False


def _describe(tool: Tool) -> str:
    return str(tool.args.get("command") or tool.args.get("file_path") or tool.name)


async def run_demo_agents(
    url: str,
    token: str,
    *,
    pace: float = 1.0,
    seed: int | None = None,
    agents: int = 3,
    resume: Mapping[str, Resume] | None = None,
) -> None:
    """Run the demo agents in the current loop until cancelled; an agent that hits an error restarts
    (in a new session, the numbering going on). ``resume``: where each agent of a stopped demo was."""
    if pace <= 0:
        raise ValueError("pace must be positive")
    master = random.Random(seed)
    desk = asyncio.Lock()
    async with HarnessClient(url, token) as harness:

        async def supervise(spec: AgentSpec, rng: random.Random) -> None:
            """Keep one agent alive across errors until cancelled."""
            where = (resume or {}).get(spec.name)
            while True:
                agent = DemoAgent(harness, spec, pace=pace, rng=rng, desk=desk, resume=where)
                try:
                    await agent.run()
                except (HarnessError, httpx.HTTPError):
                    where = Resume(agent.generation)  # a new session next, numbered on
                    await asyncio.sleep(1.0)  # server restarting or gone: try again shortly

        rngs = [random.Random(master.random()) for _ in SPECS]
        async with asyncio.TaskGroup() as group:
            for spec, rng in list(zip(SPECS, rngs, strict=True))[:agents]:
                group.create_task(supervise(spec, rng))


class DemoHandle:
    """Demo agents running on their own thread and loop; :meth:`stop` cancels them and waits."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        pace: float,
        seed: int | None,
        agents: int,
        resume: Mapping[str, Resume] | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._main, args=(url, token, pace, seed, agents, resume), name="demo-agents", daemon=True
        )
        self._thread.start()
        self._ready.wait(5)

    def _main(
        self,
        url: str,
        token: str,
        pace: float,
        seed: int | None,
        agents: int,
        resume: Mapping[str, Resume] | None,
    ) -> None:
        asyncio.set_event_loop(self._loop)
        work = run_demo_agents(url, token, pace=pace, seed=seed, agents=agents, resume=resume)
        self._task = self._loop.create_task(work)
        self._loop.call_soon(self._ready.set)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            self._loop.run_until_complete(self._task)
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    @property
    def running(self) -> bool:
        """False once the agents' thread has stopped (the CLI reports it)."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel every agent (their sessions stay as they are) and join the thread."""
        if self._task is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout)


def start_demo_agents(
    url: str,
    token: str,
    *,
    pace: float = 1.0,
    seed: int | None = None,
    agents: int = 3,
    resume: Mapping[str, Resume] | None = None,
) -> DemoHandle:
    """Start the demo agents on a background thread against the server at ``url`` (``resume``: where
    the agents of a stopped demo were, :func:`resume_points`)."""
    if pace <= 0:
        raise ValueError("pace must be positive")
    return DemoHandle(url, token, pace=pace, seed=seed, agents=agents, resume=resume)


@dataclass
class Demo:
    """A running demo: the embedded server plus its agents. ``stop()`` stops both."""

    server: Any
    agents: DemoHandle

    @property
    def url(self) -> str:
        """Base URL of the demo's server."""
        return str(self.server.url)

    @property
    def token(self) -> str:
        """Operator token of the demo's server (never print it in full)."""
        return str(self.server.token)

    def stop(self) -> None:
        """Stop the agents first (they would retry against a stopped server), then the server."""
        self.agents.stop()
        self.server.stop()


async def resume_points(plane: Any) -> dict[str, Resume]:
    """Where each demo agent was when a demo on this database stopped (crashed, killed or Ctrl+C): the
    number of its newest session and, when that session is still open, what it needs to carry on there. A
    fresh runtime token is minted for an open session (the old one is stored only as a hash); the approvals
    it left waiting are cancelled, as nobody waits for their answer any more (:data:`NOT_RUN`); its notes
    stay pending for the agent to read."""
    points: dict[str, Resume] = {}
    for spec in SPECS:
        row = await plane.store.fetchone(
            "SELECT id, account_id, api_key_id, title, ended_at FROM sessions WHERE session_reference = ?"
            " ORDER BY started_at DESC LIMIT 1",
            (spec.name,),
        )
        if row is None:
            continue
        found = _SHIFT.search(str(row["title"] or ""))
        generation = int(found.group(1)) if found else 1
        if row["ended_at"] is not None:
            points[spec.name] = Resume(generation)
            continue
        sid = str(row["id"])
        runs = await plane.store.fetchall(
            "SELECT type, data FROM events WHERE session_id = ? AND type IN"
            " ('run.started', 'run.completed', 'run.failed', 'run.cancelled') ORDER BY seq",
            (sid,),
        )
        ended = {json.loads(r["data"]).get("run_id") for r in runs if r["type"] != "run.started"}
        started = [json.loads(r["data"]).get("run_id") for r in runs if r["type"] == "run.started"]
        open_runs = [run for run in started if run not in ended]
        steps = await plane.store.fetchone(
            "SELECT MAX(CAST(json_extract(data, '$.iteration') AS INTEGER)) AS n FROM events"
            " WHERE session_id = ?",
            (sid,),
        )
        token = new_token("plr_")
        expires = now_utc() + timedelta(minutes=RUNTIME_MINUTES)
        async with plane.store.write() as tx:
            waiting = await tx.fetchall(
                "SELECT id FROM approvals WHERE session_id = ? AND status = 'pending'", (sid,)
            )
            for approval in waiting:
                await plane.approvals.finish(tx, str(approval["id"]), "cancelled", NOT_RUN, by=None)
            await insert_token(
                tx,
                token,
                "runtime",
                account_id=str(row["account_id"]),
                api_key_id=str(row["api_key_id"]),
                session_id=sid,
                expires_at=ts(expires),
            )
        points[spec.name] = Resume(
            generation,
            RuntimeTokenResponse(
                runtime_session_id=sid, token=token, expires_at=expires, session_reference=spec.name
            ),
            tasks_done=len(started) - len(open_runs),
            iteration=int(steps["n"] or 0) if steps is not None else 0,
            interrupted=open_runs[-1] if open_runs else None,
        )
    return points


RUNTIME_MINUTES = 240
"""How long a runtime token minted for a resumed session lasts (as a new session's: the harness default)."""


def start_demo(
    db_path: Any = None, *, host: str = "127.0.0.1", port: int = 0, pace: float = 1.0, seed: int | None = None
) -> Demo:
    """``preloop demo`` minus the UI: a server on a loopback port and three agents working on it.

    On a database a previous demo used, its agents carry on where they were (:func:`resume_points`): in
    the sessions it left open, their numbering going on; everything it stored is kept."""
    from server.embedded import EmbeddedServer

    server = EmbeddedServer(db_path=db_path, host=host, port=port, started_by="demo")
    server.start()
    try:
        where = server.call(resume_points(server.plane))
        agents = start_demo_agents(server.url, server.token, pace=pace, seed=seed, resume=where)
    except BaseException:
        server.stop()
        raise
    return Demo(server, agents)
