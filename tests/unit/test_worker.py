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


def test_flush_waits_for_the_jobs_before_it_and_is_bounded():
    gate = threading.Event()
    seen = []

    def apply(batch):
        gate.wait(5)
        seen.extend(batch)

    w = BatchWorker("t", apply)
    w.put(1)
    assert w.flush(timeout=0.05) is False      # held: the bound ends the wait, honestly
    gate.set()
    assert w.flush(timeout=5) is True and seen == [1]
    assert w.flush(timeout=0) is True          # nothing queued since


def test_a_flush_ends_the_gathering_and_takes_what_gathered():
    """Jobs wait `gather` for others to join them, unless someone waits for them: then
    they go at once, with every job queued so far (a command's one nft run)."""
    batches = []
    w = BatchWorker("t", lambda batch: batches.append(list(batch)), gather=600)
    w.put(1)
    w.put(2)
    assert w.flush(timeout=30) is True         # not the 600 s of gathering
    assert batches == [[1, 2]]
    w.put(3)
    assert w.flush(timeout=30) is True and batches == [[1, 2], [3]]
