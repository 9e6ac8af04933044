"""The LLM loop for one kernel: drafts, repairs and rounds, every candidate through the judge.

It starts from the compiler's candidates: the judge verifies them and the fastest becomes the
champion. Round 0 asks for `drafts` new kernels; each reply is screened, built and judged (the op's
other kernels fixed to the compiler's candidates); a build error, a refusal or a located judge
rejection goes back as a repair turn, up to `repairs` times. The verified drafts of a round are
timed against the champion in one interleaved run, and the fastest replaces it only when its whole
95% interval is above 1 (and its change becomes a lesson). Later rounds ask for one structural change
to the champion. It stops when the rounds run out, when `patience` rounds bring no speedup, or
when the calls or the cost reach their budget. Best-of-N spends the same kind of budget on blind
samples of the first prompt, with no feedback, to show what the loop adds.

Nothing is graded here but by the judge and the timer; every prompt, reply, verdict, token count
and cost is kept, and rejected candidates are kept with their reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import artifacts, backends, static
from ..judge import Settings, run_isolated
from ..kernel_ir import KernelIR
from ..spec import OpSpec
from . import Candidate, ChatProvider, Request, prompts, replies, timing
from .lessons import Playbook
from .replay import record

MODES = ("loop", "best_of_n", "compare")


@dataclass(frozen=True)
class LoopSettings:
    mode: str = "loop"
    drafts: int = 2             # drafts per round
    rounds: int = 3
    repairs: int = 2            # repair turns per draft
    patience: int = 1           # rounds without a verified speedup before stopping
    max_calls: int = 24         # per kernel and mode
    max_cost_usd: float = 5.0   # per kernel and mode
    timing_repeats: int = 15
    price_input: float = 3.0    # USD per million tokens
    price_output: float = 15.0

    @staticmethod
    def from_config(generator: dict) -> "LoopSettings":
        prices = generator.get("price_per_mtok", {})
        known = {k: generator[k] for k in LoopSettings.__dataclass_fields__ if k in generator}
        s = LoopSettings(**known, **{f"price_{k}": v for k, v in prices.items()})
        if s.mode not in MODES:
            raise ValueError(f"generator.mode {s.mode!r} is not one of {', '.join(MODES)}")
        return s


@dataclass(frozen=True)
class Context:
    """What every session of one (op, backend) job shares."""
    spec: OpSpec
    backend: str
    fixed: dict[str, str]        # kernel -> library standing in for it (the compiler's first built)
    judge: Settings
    cache: Path                  # build cache
    templates: Path
    prompts: Path                # where rendered prompts go
    replies: Path                # where replies are recorded
    logs: Path                   # where sources and per-kernel logs go
    settings: LoopSettings


@dataclass
class Entry:
    """A verified kernel that can be the champion."""
    variant: str
    provider: str
    source: str
    library: str
    file: str                    # the source's artifact, relative to the job's folder
    build: dict
    profile: dict | None = None

    def summary(self) -> dict:
        return {"variant": self.variant, "provider": self.provider, "file": self.file,
                "profile": self.profile}


def variant_of(call: str) -> str:
    return "llm_" + call.replace(".", "_")


@dataclass
class Session:
    """One kernel, one mode: the conversation, its champion and its spending."""
    ctx: Context
    kernel: KernelIR
    chat: ChatProvider
    playbook: Playbook
    champion: Entry
    learns: bool = True          # best-of-N is blind: it neither learns nor reads new lessons
    turns: list[dict] = field(default_factory=list)
    rounds: list[dict] = field(default_factory=list)
    verified: list[Entry] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)   # variant -> source, for repair prompts
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    stopped: str = ""

    # -- one call ---------------------------------------------------------------------------------
    def exhausted(self) -> str | None:
        s = self.ctx.settings
        if self.calls >= s.max_calls:
            return f"call budget spent ({self.calls} of {s.max_calls})"
        if self.cost_usd >= s.max_cost_usd:
            return f"cost budget spent (${self.cost_usd:.4f} of ${s.max_cost_usd})"
        return None

    def context(self, extra: dict) -> dict:
        c = self.champion
        profile = prompts.profile_words(c.profile, ratio=False)
        champion = {"variant": c.variant, "source": c.source, "profile": profile}
        return {"kernel": prompts.kernel_facts(self.kernel), "champion": champion,
                "backend": prompts.backend_facts(self.ctx.backend),
                "lessons": self.playbook.for_prompt(self.kernel.kind), **extra}

    def ask(self, call: str, turn: str, extra: dict) -> dict:
        """Render the prompt, send it, keep both, count the spending; then `check` the reply."""
        ctx, k = self.ctx, self.kernel
        prompt = prompts.render(ctx.templates, ctx.backend, turn, self.context(extra))
        request = Request(k.name, call, prompt)
        prompt_file = f"{k.name}.{call}.md"
        artifacts.write_text(ctx.prompts / prompt_file, prompt)
        reply = self.chat.complete(request)
        cost = (reply.input_tokens * ctx.settings.price_input
                + reply.output_tokens * ctx.settings.price_output) / 1e6
        self.calls += 1
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cost_usd += cost
        rec = {"call": call, "turn": turn, "variant": variant_of(call),
               "prompt": f"{ctx.prompts.name}/{prompt_file}",
               "reply": f"{ctx.replies.name}/{record(ctx.replies, request, reply)}",
               "model": reply.model, "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
               "cost_usd": cost, "stop_reason": reply.stop_reason, "provider_attempts": list(reply.attempts),
               "change": replies.change_note(reply.text)}
        self.turns.append(rec)
        if reply.error:
            return done(rec, "provider_error", reply.error)
        return self.check(rec, reply.text)

    def check(self, rec: dict, text: str) -> dict:
        """Take a reply as far as it goes: code block, static check, build, judge."""
        ctx, k = self.ctx, self.kernel
        source, why = replies.code_block(text, ctx.backend)
        if source is None:
            return done(rec, "no_code", why)
        self.sources[rec["variant"]] = source
        rec["source"] = f"{ctx.logs.name}/{k.name}.{rec['variant']}.c"
        artifacts.write_text(ctx.logs / f"{k.name}.{rec['variant']}.c", source)
        screened = static.check(source, ctx.backend, k.name, {i.op for i in k.body})
        rec["static"] = screened.to_json()
        if not screened.passed:
            return done(rec, "refused", f"the static check refused it: {screened.reason}")
        build = backends.get(ctx.backend).build(source, ctx.cache)
        rec["build"] = build.to_json()
        if not build.ok:
            return done(rec, "compile_error", "did not compile", prompts.build_feedback(build.log))
        verdict = run_isolated(ctx.spec, ctx.backend, {**ctx.fixed, k.name: build.library}, ctx.judge)
        rec["verdict"] = verdict
        if not verdict["passed"]:
            return done(rec, "rejected", "the judge rejected it", prompts.verdict_feedback(verdict))
        self.verified.append(Entry(rec["variant"], self.chat.name, source, build.library, rec["source"],
                                   rec["build"]))
        return done(rec, "verified", "the judge verified it")

    def record(self, variant: str) -> dict:
        return next(r for r in self.turns if r["variant"] == variant)

    # -- a draft and its repairs ------------------------------------------------------------------
    def draft(self, tag: str, turn: str, extra: dict, repairs: int) -> dict | None:
        """The last record of one draft's chain (verified, or failed after its repairs)."""
        rec = None
        for t in range(repairs + 1):
            why = self.exhausted()
            if why:
                self.stopped = why
                return rec
            rec = self.ask(f"{tag}.t{t}", turn, extra)
            if rec["outcome"] in ("verified", "provider_error"):
                if rec["outcome"] == "provider_error":
                    self.stopped = f"provider error: {rec['reason']}"
                return rec
            turn, extra = "repair", {"attempt": {"variant": rec["variant"], "outcome": rec["reason"],
                                                 "feedback": rec["feedback"],
                                                 "source": self.sources.get(rec["variant"])}}
        return rec

    def contest(self, entries: list[Entry]) -> dict:
        """Time `entries` against the champion and crown the fastest if it is surely faster
        (timing.beats). A draft that builds to the champion's own library is the champion: nothing
        to time. Returns what happened, for the round's record."""
        for e in entries:
            if e.library == self.champion.library:
                self.record(e.variant)["not_timed"] = "the same build as the champion"
        entries = [e for e in entries if e.library != self.champion.library]
        if not entries:
            return {"improved": False}
        libraries = {e.variant: e.library for e in entries} | {self.champion.variant: self.champion.library}
        try:
            profiles = timing.compare(self.ctx.spec, self.ctx.backend, self.kernel, self.ctx.fixed, libraries,
                                      self.champion.variant, self.ctx.settings.timing_repeats,
                                      self.ctx.judge.timeout_s)
        except RuntimeError as e:
            return {"improved": False, "timing_error": str(e)[-2000:]}
        self.champion.profile = profiles[self.champion.variant]
        for entry in entries:
            entry.profile = self.record(entry.variant)["profile"] = profiles[entry.variant]
        best = max(entries, key=lambda e: e.profile["speedup"]["median"])
        result = {"improved": timing.beats(profiles, best.variant), "best": best.variant,
                  "noise": profiles[timing.CONTROL]["speedup"]}
        if result["improved"]:
            rec = self.record(best.variant)
            if self.learns:
                self.playbook.learn(rec["change"], self.kernel.kind, rec["verdict"], best.profile["speedup"],
                                    self.ctx.spec.name, self.kernel.name, best.variant)
            self.champion = best
        return result

    # -- the modes ----------------------------------------------------------------------------------
    def loop(self) -> None:
        s = self.ctx.settings
        stale, history = 0, []
        for r in range(s.rounds):
            turn, extra = ("draft", {}) if r == 0 else ("improve", {"history": history})
            last = [self.draft(f"loop.r{r}.d{d}", turn, extra, s.repairs) for d in range(s.drafts)
                    if not self.stopped]
            fresh = [e for e in self.verified if e.variant in {x["variant"] for x in last if x}]
            contest = self.contest(fresh)
            self.rounds.append({"round": r, "drafts": [x["variant"] for x in last if x],
                                "verified": [e.variant for e in fresh], **contest,
                                "champion": self.champion.variant})
            history = [{"variant": x["variant"], "outcome": x["reason"], "change": x["change"],
                        "profile": x.get("not_timed") or prompts.profile_words(x.get("profile"))}
                       for x in last if x]
            stale = 0 if contest["improved"] else stale + 1
            if self.stopped:
                return
            if stale >= s.patience:
                self.stopped = f"{stale} round(s) without a verified speedup"
                return
        self.stopped = f"all {s.rounds} rounds done"

    def best_of_n(self, n: int) -> None:
        for i in range(n):
            if self.stopped:
                break
            self.draft(f"bon.s{i}", "draft", {}, repairs=0)
        contest = self.contest(list(self.verified))
        self.rounds.append({"round": 0, "samples": n, "verified": [e.variant for e in self.verified],
                            **contest, "champion": self.champion.variant})
        self.stopped = self.stopped or f"all {n} samples drawn"

    def to_json(self) -> dict:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost_usd": self.cost_usd, "stopped": self.stopped, "champion": self.champion.summary(),
                "rounds": self.rounds, "turns": self.turns}

    def offer(self) -> dict | None:
        """The champion in compile.json's record format (its `file` relative to the job's folder),
        for validate to judge again, when the model wrote it."""
        c = self.champion
        if c.provider != self.chat.name:
            return None
        change = self.record(c.variant)["change"]
        candidate = Candidate(self.kernel.name, c.variant, c.source, c.provider, change)
        return {**candidate.to_json(), "file": c.file, "attempts": [c.build], "ok": True,
                "library": c.library}


def done(rec: dict, outcome: str, reason: str, feedback: str = "") -> dict:
    """Close a call's record: its outcome (provider_error, no_code, refused, compile_error, rejected
    or verified), a short reason, and what a repair prompt is told."""
    rec.update(outcome=outcome, reason=reason, feedback=feedback or reason)
    return rec


# -- one kernel, every mode ----------------------------------------------------------------------------


def baseline(ctx: Context, kernel: KernelIR, built: list[tuple[dict, str]]
             ) -> tuple[Entry | None, list[dict]]:
    """The compiler's built candidates (compile record, source), judged and timed: the fastest
    verified one is the first champion. Returns it (None if none passed) and what the judge said.
    Raises RuntimeError when the verified ones can't be timed."""
    entries, judged = [], []
    for rec, source in built:
        verdict = run_isolated(ctx.spec, ctx.backend, {**ctx.fixed, kernel.name: rec["library"]}, ctx.judge)
        judged.append({"variant": rec["variant"], "passed": verdict["passed"],
                       "reason": verdict.get("reason")})
        if verdict["passed"]:
            entries.append(Entry(rec["variant"], rec["provider"], source, rec["library"],
                                 f"candidates/{rec['file']}", rec["attempts"][-1]))
    if not entries:
        return None, judged
    libraries = {e.variant: e.library for e in entries}
    profiles = timing.compare(ctx.spec, ctx.backend, kernel, ctx.fixed, libraries, entries[0].variant,
                              ctx.settings.timing_repeats, ctx.judge.timeout_s)
    for e in entries:
        e.profile = profiles[e.variant]
    for j in judged:
        j["profile"] = profiles.get(j["variant"])
    return min(entries, key=lambda e: e.profile["median_s"]), judged


def run_kernel(ctx: Context, kernel: KernelIR, chat: ChatProvider, playbook: Playbook,
               built: list[tuple[dict, str]]) -> tuple[dict, list[dict]]:
    """The kernel's log and what it offers validate (the model-written champions, see `offer`)."""
    mode = ctx.settings.mode
    log: dict = {"kernel": kernel.name, "mode": mode}
    try:
        start, log["baseline"] = baseline(ctx, kernel, built)
    except RuntimeError as e:
        return {**log, "skipped": f"the compiler's candidates could not be timed: {str(e)[-2000:]}"}, []
    if start is None:
        return {**log, "skipped": "no compiler candidate was verified: nothing to start from"}, []
    blind = Playbook(list(playbook.lessons))  # best-of-N sees only what was known before the loop
    sessions: dict[str, Session] = {}
    if mode in ("loop", "compare"):
        sessions["loop"] = Session(ctx, kernel, chat, playbook, replace(start))
        sessions["loop"].loop()
    if mode in ("best_of_n", "compare"):
        n = sessions["loop"].calls if mode == "compare" else ctx.settings.max_calls
        sessions["best_of_n"] = Session(ctx, kernel, chat, blind, replace(start), learns=False)
        sessions["best_of_n"].best_of_n(n)
    log.update({name: s.to_json() for name, s in sessions.items()})
    if mode == "compare":
        log["comparison"] = compare_modes(ctx, kernel, start, sessions)
    offered = {o["variant"]: o for o in (s.offer() for s in sessions.values()) if o is not None}
    return log, list(offered.values())


def compare_modes(ctx: Context, kernel: KernelIR, start: Entry, sessions: dict[str, Session]) -> dict:
    """The loop's and best-of-N's champions against the compiler's, in one interleaved timing."""
    libraries = {"compiler": start.library} | {name: s.champion.library for name, s in sessions.items()}
    calls = {name: s.calls for name, s in sessions.items()}
    try:
        profiles = timing.compare(ctx.spec, ctx.backend, kernel, ctx.fixed, libraries, "compiler",
                                  ctx.settings.timing_repeats, ctx.judge.timeout_s)
    except RuntimeError as e:
        return {"calls": calls, "timing_error": str(e)[-2000:]}
    return {"calls": calls, "speedup_over_compiler": {name: profiles[name]["speedup"] for name in sessions}}
