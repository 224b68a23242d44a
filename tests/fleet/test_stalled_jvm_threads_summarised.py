"""A stalled Java process (a Pulsar broker that stopped acknowledging) is described by where its working threads
are: a line for each named thread that is not waiting for work, and a count of the idle ones. The dump below is
the shape ``jcmd <pid> Thread.print`` prints (JDK 17)."""

from __future__ import annotations

from bookie_fleet.processes import busy_threads

DUMP = '''2026-11-30 09:05:58
Full thread dump OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1 mixed mode, sharing):

"BookKeeperClientWorker-OrderedExecutor-0-0" #40 prio=5 os_prio=0 cpu=120.52ms elapsed=70.12s tid=0x1 nid=0x2 \
waiting on condition  [0x00007f]
   java.lang.Thread.State: WAITING (parking)
\tat jdk.internal.misc.Unsafe.park(java.base@17.0.15/Native Method)
\t- parking to wait for  <0x00000000f1> (a java.util.concurrent.CountDownLatch$Sync)
\tat java.util.concurrent.locks.LockSupport.park(java.base@17.0.15/LockSupport.java:211)

"BookKeeperClientWorker-OrderedExecutor-1-0" #41 prio=5 os_prio=0 cpu=99.00ms elapsed=70.12s tid=0x3 nid=0x4 \
runnable  [0x00007e]
   java.lang.Thread.State: RUNNABLE
\tat org.apache.bookkeeper.client.PendingAddOp.sendWriteRequest(PendingAddOp.java:140)
\tat org.apache.bookkeeper.client.PendingAddOp.initiate(PendingAddOp.java:250)
\tat org.apache.bookkeeper.client.LedgerHandle.doAsyncAddEntry(LedgerHandle.java:1410)
\tat org.apache.bookkeeper.client.LedgerHandle.asyncAddEntry(LedgerHandle.java:1200)

"pulsar-io-3-1" #30 prio=5 os_prio=0 cpu=50.00ms elapsed=70.12s tid=0x5 nid=0x6 runnable  [0x00007d]
   java.lang.Thread.State: RUNNABLE
\tat io.netty.channel.epoll.Native.epollWait(Native Method)
\tat io.netty.channel.epoll.EpollEventLoop.epollWait(EpollEventLoop.java:316)

"metadata-store-10-1" #20 prio=5 os_prio=0 cpu=10.00ms elapsed=70.12s tid=0x7 nid=0x8 waiting for monitor entry
   java.lang.Thread.State: BLOCKED (on object monitor)
\tat org.apache.pulsar.metadata.impl.ZKMetadataStore.batchOperation(ZKMetadataStore.java:200)
\t- waiting to lock <0x00000000f2> (a java.lang.Object)

"Reference Handler" #2 daemon prio=10 os_prio=0 cpu=0.10ms elapsed=70.13s tid=0x9 nid=0xa waiting on condition
   java.lang.Thread.State: RUNNABLE
\tat java.lang.ref.Reference.waitForReferencePendingList(java.base@17.0.15/Native Method)
'''


def test_threads_not_waiting_for_work_are_named_with_their_top_frames() -> None:
    lines = busy_threads(DUMP, ("BookKeeperClientWorker", "pulsar-io", "metadata-store"), frames=2)
    assert lines == [
        "  BookKeeperClientWorker-OrderedExecutor-1-0 (RUNNABLE): "
        "org.apache.bookkeeper.client.PendingAddOp.sendWriteRequest(PendingAddOp.java:140) < "
        "org.apache.bookkeeper.client.PendingAddOp.initiate(PendingAddOp.java:250)",
        "  metadata-store-10-1 (BLOCKED (on object monitor)): "
        "org.apache.pulsar.metadata.impl.ZKMetadataStore.batchOperation(ZKMetadataStore.java:200)",
        "  (2 more of them idle, waiting for work)",
    ]


def test_threads_of_other_names_are_left_out() -> None:
    assert busy_threads(DUMP, ("ZKC",)) == ["  (0 more of them idle, waiting for work)"]


def test_no_dump_gives_no_thread() -> None:
    assert busy_threads("(no thread dump: jcmd not found)", ("pulsar-io",)) == [
        "  (0 more of them idle, waiting for work)"]
