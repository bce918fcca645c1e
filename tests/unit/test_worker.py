import threading

from homework.worker import BatchWorker


def test_jobs_are_applied_in_order_and_batched():
    gate = threading.Event()
    batches = []

    def apply(batch):
        gate.wait(5)           # hold the first batch so the next jobs pile up
        batches.append(list(batch))

    w = BatchWorker("t", apply)
    w.put(1)
    for n in range(2, 6):
        w.put(n)
    gate.set()
    w.flush()
    assert [j for b in batches for j in b] == [1, 2, 3, 4, 5]
    assert len(batches) < 5    # the queued jobs went in one call, not one each


def test_a_failing_batch_does_not_stop_the_worker():
    seen = []

    def apply(batch):
        if 0 in batch:
            raise RuntimeError("boom")
        seen.extend(batch)

    w = BatchWorker("t", apply)
    w.put(0)
    w.flush()
    w.put(7)
    w.flush()
    assert seen == [7]


def test_flush_waits_for_the_jobs_queued_so_far_and_gives_up_after_its_timeout():
    gate = threading.Event()
    applied = []

    def apply(batch):
        gate.wait(10)          # a slow nft run
        applied.extend(batch)

    w = BatchWorker("t", apply)
    assert w.flush(timeout=0.1)             # nothing queued: nothing to wait for
    w.put(1)
    assert not w.flush(timeout=0.2)         # still being applied: the caller is not held
    assert applied == []
    gate.set()
    assert w.flush(timeout=10)
    assert applied == [1]
