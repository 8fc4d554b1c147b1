"""PassReport: what run_passes returns."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List


class PassReport:
    """The report of one run_passes call: the content of ``hilo-opt --report``.

    ``passes`` is the list of report entries, one per pass run (pipelines expanded), each a
    dict ``{"name": ..., "changed": bool, <the pass's details>, "warnings": [...],
    "module": <module name>}``. ``changed`` says whether any pass changed the module;
    ``explanations`` holds the ``--explain`` lines (with ``explain=True``).
    """

    def __init__(self, data: Dict[str, Any]) -> None:
        self.passes: List[Dict[str, Any]] = data["passes"]
        self.changed: bool = data["changed"]
        self.explanations: List[str] = data["explanations"]

    def to_json(self) -> Dict[str, Any]:
        """The report as hilo-opt --report writes it: ``{"passes": [...]}``."""
        return {"passes": self.passes}

    @property
    def warnings(self) -> List[str]:
        """Every pass's warnings, as ``"<pass>: <text>"``."""
        return [f"{entry['name']}: {text}" for entry in self.passes
                for text in entry.get("warnings", [])]

    def entries(self, name: str) -> List[Dict[str, Any]]:
        """The entries of the pass called ``name`` (a pass may run more than once)."""
        return [entry for entry in self.passes if entry.get("name") == name]

    def __getitem__(self, index: int) -> Dict[str, Any]:
        return self.passes[index]

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.passes)

    def __len__(self) -> int:
        return len(self.passes)

    def __repr__(self) -> str:
        names = ", ".join(entry.get("name", "?") for entry in self.passes)
        return f"<PassReport changed={self.changed} passes=[{names}]>"
