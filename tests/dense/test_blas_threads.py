"""Threads: the server runs BLAS one thread per call; model OpenMP threads sleep when idle."""

from __future__ import annotations

import pytest

threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl comes with [server]")


def test_one_blas_thread_limits_and_can_be_undone() -> None:
    from glassrag.interfaces.cli.server import one_blas_thread

    controller = threadpoolctl.ThreadpoolController()
    blas = controller.select(user_api="blas")
    if not blas.lib_controllers:
        pytest.skip("numpy is not linked against a BLAS threadpoolctl can see")
    before = [lib.num_threads for lib in blas.lib_controllers]
    try:
        assert one_blas_thread() is True
        after = threadpoolctl.ThreadpoolController().select(user_api="blas")
        assert {lib.num_threads for lib in after.lib_controllers} == {1}
    finally:
        for lib, threads in zip(blas.lib_controllers, before, strict=True):
            lib.set_num_threads(threads)


def test_model_openmp_threads_sleep_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    from glassrag.dense.local_models import passive_openmp

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    passive_openmp()
    import os

    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    passive_openmp()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
