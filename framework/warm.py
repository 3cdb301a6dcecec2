"""The warm-up of the server that forks sweep trials (`framework.trial_launchers.ForkedTrials`).

That server imports this module once; each trial is then a child forked from it, so what is
imported here is not imported again per trial. It lists what a run imports: torch, Lightning,
MLflow and the modules MLflow imports lazily on a run's first use of a sqlite store (SQLAlchemy,
alembic, its ORM models: 400+ modules, measured at ~5 s of an 8.7 s first run on 2 cores), and
the framework's own modules. Two effects beyond imports: SQLAlchemy's ORM mappers are configured
(otherwise on a store's first query, ~1 s per process), and the installed packages are listed
(`run_context.installed_versions`, read once per process; 0.2-0.5 s a trial otherwise): they do
not change while the command that started the server runs. Nothing here opens a connection,
starts a thread or runs a torch operation, so a child forked from the server starts clean: it
sets its own torch thread count, seeds and MLflow store.

Only the server imports this module (`exp sweep` itself never does).
"""

from __future__ import annotations

import lightning.pytorch  # noqa: F401
import mlflow.store.db.utils  # noqa: F401
import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
import mlflow.tracking  # noqa: F401
import sqlalchemy.orm
import torch  # noqa: F401

import framework.builder  # noqa: F401
import framework.compare  # noqa: F401  (`exp run`'s parser names every command)
import framework.mlflow_logger  # noqa: F401
import framework.run_context
import framework.runner  # noqa: F401
import framework.search  # noqa: F401  (a trial's runner asks it for a search's pruning callback)
import framework.sweep  # noqa: F401
import framework.tracking  # noqa: F401
import framework.trial_launchers  # noqa: F401
import framework.ui  # noqa: F401  (`exp run`'s parser names every command)

sqlalchemy.orm.configure_mappers()
framework.run_context.installed_versions()
