// Runs BookKeeper's own (Java) metadata code for the interop tests in ../test_metadata_java_interop.py.
// Launched as a single-file program: java -cp "$BOOKIE_FLEET_BK_LIB/*" MetadataInterop.java <mode> ...
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.bookkeeper.bookie.Cookie;
import org.apache.bookkeeper.client.LedgerMetadataBuilder;
import org.apache.bookkeeper.client.api.DigestType;
import org.apache.bookkeeper.client.api.LedgerMetadata;
import org.apache.bookkeeper.conf.AbstractConfiguration;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.meta.LedgerManager;
import org.apache.bookkeeper.meta.LedgerMetadataSerDe;
import org.apache.bookkeeper.meta.LongZkLedgerIdGenerator;
import org.apache.bookkeeper.meta.ZkLedgerIdGenerator;
import org.apache.bookkeeper.net.BookieId;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class MetadataInterop {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "metadata-write": metadataWrite(); break;
            case "metadata-read": metadataRead(args[1]); break;
            case "cookie": cookie(); break;
            case "ids": ids(args[1], args[2], Integer.parseInt(args[3])); break;
            case "ranges": ranges(args[1], args[2]); break;
            default: throw new IllegalArgumentException(args[0]);
        }
        System.exit(0);
    }

    // Results go to stdout prefixed, so that ZooKeeper's log lines on stdout cannot be mistaken for them.
    static void result(String line) {
        System.out.println("RESULT " + line);
    }

    static void metadataWrite() throws Exception {
        LedgerMetadata md = LedgerMetadataBuilder.create()
            .withId(7).withEnsembleSize(2).withWriteQuorumSize(2).withAckQuorumSize(1)
            .newEnsembleEntry(0L, Arrays.asList(BookieId.parse("a:3181"), BookieId.parse("b:3181")))
            .newEnsembleEntry(5L, Arrays.asList(BookieId.parse("a:3181"), BookieId.parse("c:3181")))
            .withPassword("pw".getBytes()).withDigestType(DigestType.CRC32C)
            .withClosedState().withLastEntryId(9).withLength(100)
            .withCreationTime(1700000000000L).storingCreationTime(true)
            .withCustomMetadata(Collections.singletonMap("app", "x".getBytes()))
            .withCToken(3).build();
        result(Base64.getEncoder().encodeToString(new LedgerMetadataSerDe().serialize(md)));
    }

    static void metadataRead(String b64) throws Exception {
        LedgerMetadata md = new LedgerMetadataSerDe().parseConfig(Base64.getDecoder().decode(b64), 7,
            Optional.empty());
        result(md.getState() + "|" + md.getLastEntryId() + "|" + md.getLength() + "|"
            + md.getAllEnsembles() + "|" + md.getDigestType() + "|" + md.getAckQuorumSize() + "|"
            + md.getCtime() + "|" + md.getCToken() + "|" + new String(md.getPassword()));
    }

    static void cookie() throws Exception {
        Cookie c = Cookie.newBuilder().setBookieId("10.0.0.5:3181").setJournalDirs("/data/journal")
            .setLedgerDirs("2\t/data/l1\t/data/l2").setInstanceId("abc").build();
        result(Base64.getEncoder().encodeToString(c.toString().getBytes("UTF-8")));
    }

    static ZooKeeper connect(String connect) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no ZooKeeper session");
        }
        return zk;
    }

    static void ids(String connect, String root, int count) throws Exception {
        ZooKeeper zk = connect(connect);
        ZkLedgerIdGenerator shortGen = new ZkLedgerIdGenerator(zk, root, "idgen", ZooDefs.Ids.OPEN_ACL_UNSAFE);
        LongZkLedgerIdGenerator gen = new LongZkLedgerIdGenerator(zk, root, "idgen-long", shortGen,
            ZooDefs.Ids.OPEN_ACL_UNSAFE);
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            CompletableFuture<Long> f = new CompletableFuture<>();
            gen.generateLedgerId((rc, id) -> {
                if (rc == 0) {
                    f.complete(id);
                } else {
                    f.completeExceptionally(new IllegalStateException("rc " + rc));
                }
            });
            out.add(f.get(20, TimeUnit.SECONDS));
        }
        result(out.toString());
        zk.close();
    }

    static void ranges(String connect, String root) throws Exception {
        ZooKeeper zk = connect(connect);
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://" + connect + root);
        // HierarchicalLedgerManager is package-private: the factory needs a LayoutManager, reflection does not.
        java.lang.reflect.Constructor<?> ctor = Class.forName("org.apache.bookkeeper.meta.HierarchicalLedgerManager")
            .getDeclaredConstructor(AbstractConfiguration.class, ZooKeeper.class);
        ctor.setAccessible(true);
        LedgerManager lm = (LedgerManager) ctor.newInstance(conf, zk);
        LedgerManager.LedgerRangeIterator it = lm.getLedgerRanges(10000);
        while (it.hasNext()) {
            result(it.next().getLedgers().toString());
        }
        zk.close();
    }
}
