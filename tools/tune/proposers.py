"""Proposers behind one ask/tell seam. They suggest; the loop in loop.py evaluates and tells them back.

ask() returns the next parameters (None: nothing more to propose now); tell() reports the outcome
(a median time in seconds to minimize, or None for a rejected candidate). A proposer never runs a
candidate, never sees the ledger's storage, and may be replaced without touching the loop.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from typing import Any, Protocol

from hyperloom.core.errors import HyperloomError
from hyperloom.tools.tune.space import VARIANT, Params, Space

Seen = Callable[[Params], bool]
"""Whether a candidate with these parameters was already recorded or is in flight."""


class Proposer(Protocol):
    name: str

    def ask(self, seen: Seen) -> Params | None: ...

    def tell(self, params: Params, median_s: float | None) -> None: ...


class GridProposer:
    """Every combination, in the order the spec lists the values."""

    name = "grid"

    def __init__(self, space: Space) -> None:
        self._space = space

    def ask(self, seen: Seen) -> Params | None:
        return next((p for p in self._space.grid() if not seen(p)), None)

    def tell(self, params: Params, median_s: float | None) -> None:
        pass


class RandomProposer:
    """Uniform draws without repetition (a shuffled grid)."""

    name = "random"

    def __init__(self, space: Space, seed: int) -> None:
        self._order = list(space.grid())
        random.Random(seed).shuffle(self._order)

    def ask(self, seen: Seen) -> Params | None:
        return next((p for p in self._order if not seen(p)), None)

    def tell(self, params: Params, median_s: float | None) -> None:
        pass


class ExternalOnly:
    """Proposes nothing itself: candidates come from tune_propose (the loop drains that queue first)."""

    name = "external"

    def ask(self, seen: Seen) -> Params | None:
        return None

    def tell(self, params: Params, median_s: float | None) -> None:
        pass


class OptunaProposer:
    """An Optuna sampler through ask-and-tell; with `storage`, a study shared by several machines.

    tpe: Optuna's TPE over each define's values as categories. cmaes: CMA-ES over each value's index
    in numeric order (an ordinal axis), for spaces whose every candidate value is a number.

    Machines sharing a study never run one candidate twice: a candidate another machine finished, or
    is running (a RUNNING trial younger than `lease_s`), is skipped; when two machines ask for the same
    candidate at once, the lower trial number owns it and the other backs off. A RUNNING trial older
    than the lease belongs to a machine that died, and its candidate may run again.
    """

    DUPLICATE = "hyperloom_duplicate"  # user attribute of trials told FAIL only because another owns them

    def __init__(self, space: Space, seed: int, storage: str | None = None, study: str = "hyperloom", lease_s: float = 3600.0,
                 sampler: str = "tpe") -> None:
        try:
            import optuna
        except ImportError as exc:
            raise HyperloomError(f"the {sampler} strategy needs Optuna, which is not installed",
                                 "pip install 'hyperloom[tune]' or use strategy grid or random") from exc
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.name = sampler
        self._optuna = optuna
        self._space = space
        self._lease_s = lease_s
        startup = min(8, max(space.size // 4, 2))
        # Optuna's parameters: the own variant's defines by name; with further variants, a VARIANT category
        # and each further variant's defines as "<variant>:<define>", asked only when that variant is drawn.
        self._joint = bool(space.others)
        labelled = {space.variant: space.values, **space.others}
        self._names = {label: {(name if label == space.variant else f"{label}:{name}"): name for name in values}
                              for label, values in labelled.items()}
        self._define_of = {optuna_name: name for names in self._names.values() for optuna_name, name in names.items()}
        if sampler == "cmaes":
            if self._joint:
                raise HyperloomError("cmaes searches one variant's numeric space, and this session searches several variants",
                                     "use strategy tpe, grid or random")
            self._ordered = {name: _numeric_order(name, values) for name, values in space.values.items()}
            self._distributions = {name: optuna.distributions.IntDistribution(0, len(values) - 1) for name, values in self._ordered.items()}
            self._decoding = {name: dict(enumerate(values)) for name, values in self._ordered.items()}
            try:
                import cmaes  # noqa: F401  (CmaEsSampler imports it at its first sample: fail here, not mid-run)
            except ImportError as exc:
                raise HyperloomError("the cmaes strategy needs the cmaes package, which is not installed",
                                     "pip install 'hyperloom[tune]' or use strategy tpe") from exc
            chosen = optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=startup, warn_independent_sampling=False)
        else:
            self._distributions = {
                optuna_name: optuna.distributions.CategoricalDistribution([str(v) for v in labelled[label][name]])
                for label, names in self._names.items() for optuna_name, name in names.items()
            }
            self._decoding = {optuna_name: {str(v): v for v in labelled[label][name]} for label, names in self._names.items()
                                                                                                 for optuna_name, name in names.items()}
            if self._joint:
                self._distributions[VARIANT] = optuna.distributions.CategoricalDistribution(list(labelled))
            chosen = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)
        # No connection pool: every storage call opens and closes its own connection, so a
        # session that ends (or is killed) leaves nothing open on a shared server.
        from sqlalchemy.pool import NullPool

        # Optuna's value for a candidate's define value: a category (its text) for tpe, an index for cmaes.
        self._encoding = {name: {str(v): e for e, v in table.items()} for name, table in self._decoding.items()}
        try:
            rdb = None if storage is None else optuna.storages.RDBStorage(storage, engine_kwargs={"poolclass": NullPool})
            self.study = optuna.create_study(storage=rdb, study_name=study, sampler=chosen, direction="minimize",
                                             load_if_exists=rdb is not None)
        except Exception as exc:  # noqa: BLE001 - a driver, a refused connection, a database that is not Optuna's: all the URL's
            if storage is None:
                raise
            reason = " ".join(str(exc).split())[:200]
            raise HyperloomError(f"the storage could not be opened ({type(exc).__name__}: {reason})",
                                 "check the URL, that its driver is installed (psycopg for postgresql+psycopg://) and that the server is "
                                 "reachable") from exc
        self._open: dict[str, object] = {}

    def _key(self, params: Params) -> str:
        return repr(sorted((k, str(v)) for k, v in params.items()))

    def _decode(self, encoded: dict[str, Any]) -> Params:
        """A trial's parameters (Optuna's encoding) → the candidate's define values (and its VARIANT, if not the own)."""
        params: Params = {}
        for optuna_name, value in encoded.items():
            if optuna_name == VARIANT:
                if value != self._space.variant:
                    params[VARIANT] = value
            else:
                params[self._define_of[optuna_name]] = self._decoding[optuna_name][value]
        return params

    def _encode(self, params: Params) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A candidate → (Optuna's encoding, its distributions), or None when it lies outside the sampler's space."""
        label = str(params.get(VARIANT, self._space.variant))
        names = self._names.get(label)
        if names is None or set(params) - {VARIANT} != set(names.values()):
            return None
        encoded: dict[str, Any] = {optuna_name: self._encoding[optuna_name].get(str(params[name])) for optuna_name, name in names.items()}
        if None in encoded.values():
            return None
        if self._joint:
            encoded[VARIANT] = label
        return encoded, {name: self._distributions[name] for name in encoded}

    def _suggest(self) -> Any:
        """A new trial: a point of the own space, or, with further variants, a variant and a point of its space."""
        if not self._joint:
            return self.study.ask(self._distributions)
        trial = self.study.ask()
        label = trial.suggest_categorical(VARIANT, self._distributions[VARIANT].choices)
        for optuna_name in self._names[label]:
            trial.suggest_categorical(optuna_name, self._distributions[optuna_name].choices)
        return trial

    def _live(self, trial: Any) -> bool:
        """A RUNNING trial whose machine may still finish it."""
        started = trial.datetime_start
        return started is not None and (dt.datetime.now() - started).total_seconds() < self._lease_s

    def _taken(self) -> dict[str, Any]:
        """Candidates the study holds: finished ones (a real result over a FAIL) and live RUNNING ones."""
        taken: dict[str, Any] = {}
        state = self._optuna.trial.TrialState
        for trial in self.study.get_trials(deepcopy=False):
            if trial.user_attrs.get(self.DUPLICATE) or not trial.params:
                continue
            key = self._key(self._decode(trial.params))
            held = trial.state in (state.FAIL, state.PRUNED) or (trial.state == state.RUNNING and self._live(trial))
            if trial.state == state.COMPLETE or (held and key not in taken):  # a real result wins over a failure or a run
                taken[key] = trial
        return taken

    def _owner_elsewhere(self, key: str, number: int) -> bool:
        """Another machine asked for the same candidate first (a lower trial number) and may still run it."""
        state = self._optuna.trial.TrialState
        return any(
            t.number < number and t.params and self._key(self._decode(t.params)) == key and not t.user_attrs.get(self.DUPLICATE)
            and (t.state != state.RUNNING or self._live(t))
            for t in self.study.get_trials(deepcopy=False, states=(state.RUNNING, state.COMPLETE, state.FAIL))
        )

    def ask(self, seen: Seen) -> Params | None:
        taken = self._taken()
        for _ in range(4 * max(self._space.size, 1)):
            trial = self._suggest()
            params = self._decode(trial.params)
            key = self._key(params)
            if self._known(params, key, taken, seen) or self._owner_elsewhere(key, trial.number):
                # A repeat (here or on another machine sharing the study): tell the sampler what is
                # known, so it moves on; the candidate itself never runs twice.
                earlier = taken.get(key)
                if earlier is not None and earlier.state == self._optuna.trial.TrialState.COMPLETE:
                    self.study.tell(trial, earlier.value)
                else:
                    trial.set_user_attr(self.DUPLICATE, True)
                    self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                taken = self._taken()
                continue
            self._open[key] = trial
            return params
        return self._first_novel(seen, taken)

    def _known(self, params: Params, key: str, taken: dict[str, Any], seen: Seen) -> bool:
        """The study holds this candidate, this machine has it open, or the loop recorded or runs it."""
        return key in taken or key in self._open or seen(params)

    def _first_novel(self, seen: Seen, taken: dict[str, Any]) -> Params | None:
        """When the sampler keeps drawing repeats (a small or lopsided space), the first novel point of the grid,
        enqueued so that the study records it as its own trial; None once the space is exhausted."""
        for params in self._space.grid():
            known, key = self._encode(params), self._key(params)
            if known is None or self._known(params, key, taken, seen):
                continue
            self.study.enqueue_trial(known[0])
            trial = self._suggest()  # in a shared study another machine may take the enqueued point first
            drawn = self._decode(trial.params)
            key = self._key(drawn)
            if self._known(drawn, key, taken, seen):
                trial.set_user_attr(self.DUPLICATE, True)
                self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
                continue
            self._open[key] = trial
            return drawn
        return None

    def tell(self, params: Params, median_s: float | None) -> None:
        trial = self._open.pop(self._key(params), None)
        if trial is None:  # a candidate from elsewhere (baseline, tune_propose, a resumed ledger)
            known = self._encode(params)
            if known is not None:  # the sampler can only learn from points of its own space
                encoded, distributions = known
                self.study.add_trial(self._optuna.trial.create_trial(
                    params=encoded, distributions=distributions,
                    value=median_s, state=self._optuna.trial.TrialState.COMPLETE if median_s is not None
                                          else self._optuna.trial.TrialState.FAIL,
                ))
            return
        if median_s is None:
            self.study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, median_s)

def _numeric_order(name: str, values: list[str | int]) -> list[str | int]:
    """The values in numeric order, for an ordinal axis; a value that is not a number is refused."""
    bad = [v for v in values if not _is_number(v)]
    if bad:
        raise HyperloomError(f"cmaes searches numeric spaces, and {name} has the value {bad[0]!r}",
                             "use strategy tpe for categorical defines, or give numbers")
    return sorted(values, key=float)


def _is_number(value: str | int) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def make_proposer(strategy: str, space: Space, seed: int, storage: str | None, study: str, lease_s: float = 3600.0) -> Proposer:
    if strategy not in ("tpe", "cmaes") and storage is not None:
        raise HyperloomError("storage is only used by the tpe and cmaes strategies", "pass strategy=tpe or cmaes, or drop storage")
    if strategy in ("grid", "random", "tpe", "cmaes") and space.size == 0:
        raise HyperloomError(f"the spec has no tuning block, so {strategy} has nothing to propose",
                             "add tuning: {DEFINE: [values...]} to kernel.yaml, or use strategy external")
    if strategy == "grid":
        return GridProposer(space)
    if strategy == "random":
        return RandomProposer(space, seed)
    if strategy in ("tpe", "cmaes"):
        return OptunaProposer(space, seed, storage, study, lease_s, sampler=strategy)
    return ExternalOnly()
