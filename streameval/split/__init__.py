"""Splits as lazy columns: hold-out, k-fold, repeated k-fold, leave-one-out, time, bootstrap.

streameval does not train models: it makes the splits and evaluates what a model predicted
on them. Every function takes a Polars DataFrame or LazyFrame and returns the same kind with
the split's column(s) added; nothing is read before you collect.

A row's assignment comes from a stable hash of its key — a row id (``by=``) or a group key
(``group=``) — and the seed (:mod:`streameval.split.keys` spells the hash out), never from its
position: the same rows give the same split whatever their order, file or chunk, and on any
machine. Functions where a row belongs to one part add a column (:func:`holdout`,
:func:`kfold`, :func:`leave_one_out`); those where a row belongs to several return long form,
one row per membership (:func:`repeated_kfold`, :func:`time_split`, :func:`bootstrap`).
"""

from __future__ import annotations

from .folds import holdout, kfold, leave_one_out, repeated_kfold
from .resample import bootstrap
from .timesplit import time_split

__all__ = ["bootstrap", "holdout", "kfold", "leave_one_out", "repeated_kfold", "time_split"]
