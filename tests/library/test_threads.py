"""dptutor.audit._threads.one_thread: one thread in every OpenMP/BLAS pool inside, the previous limits after."""
from __future__ import annotations

import sklearn.linear_model  # noqa: F401 -- loads the OpenMP library that the learned statistic's fits use
from threadpoolctl import ThreadpoolController

from dptutor.audit._threads import one_thread


def test_one_thread_limits_every_pool_and_restores_them():
    before = [(p["internal_api"], p["num_threads"]) for p in ThreadpoolController().info()]
    assert before, "no OpenMP or BLAS library is loaded: nothing to check"
    with one_thread():
        inside = [p["num_threads"] for p in ThreadpoolController().info()]
        with one_thread():  # nested, as a scoring call inside a fit would be
            assert [p["num_threads"] for p in ThreadpoolController().info()] == inside
    assert inside == [1] * len(before)
    assert [(p["internal_api"], p["num_threads"]) for p in ThreadpoolController().info()] == before


def test_a_first_call_before_scikit_learn_is_imported_still_limits_its_openmp():
    """The controller is made once: made before any fit imported scikit-learn, it must still see its OpenMP."""
    import json
    import subprocess
    import sys

    code = ("import sys\nfrom dptutor.audit._threads import one_thread\nassert 'sklearn' not in sys.modules\n"
            "with one_thread():\n    import sklearn.linear_model\n    from threadpoolctl import ThreadpoolController\n"
            "    info = ThreadpoolController().info()\n"
            "import json\nprint(json.dumps(sorted((p['internal_api'], p['num_threads']) for p in info)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    pools = json.loads(out)  # [name, threads] pairs printed by the child
    assert ["openmp", 1] in pools and all(n == 1 for _, n in pools), pools
