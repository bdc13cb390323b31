"""Builders of job definitions for the tests (docs/marketdata.md, "Job definitions")."""

from __future__ import annotations

import json


def http(url: str = "https://prices.example/btc", **extra) -> dict:
    return {"httpTask": {"url": url, **extra}}


def parse(path: str = "$.price") -> dict:
    return {"jsonParseTask": {"path": path}}


def source(url: str = "https://prices.example/btc", path: str = "$.price", *more) -> dict:
    """A job: GET url, take the number at path, then ``more`` tasks."""
    return {"tasks": [http(url), parse(path), *more]}


def median(*jobs, **extra) -> dict:
    return {"medianTask": {"jobs": list(jobs), **extra}}


def mean(*jobs, **extra) -> dict:
    return {"meanTask": {"jobs": list(jobs), **extra}}


def value(text: str) -> dict:
    return {"valueTask": {"value": text}}


def definition(*tasks) -> str:
    return json.dumps({"tasks": list(tasks)})
