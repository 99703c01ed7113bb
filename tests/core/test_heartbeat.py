import threading

from core.heartbeat import Heartbeat


def test_the_heartbeat_beats_while_the_block_runs_and_stops_after():
    beats: list[int] = []
    twice = threading.Event()

    def beat() -> None:
        beats.append(1)
        if len(beats) >= 2:
            twice.set()
        if len(beats) == 1:
            raise RuntimeError("a missed beat does not stop the heartbeat")

    with Heartbeat(beat, 0.01) as heartbeat:
        assert twice.wait(30)
    assert not heartbeat._thread.is_alive()  # stopped with the block: no beat after the work ends
