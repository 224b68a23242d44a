// Apache BookKeeper's own Java client, driven by the compatibility tests in tests/compat/.
// Compiled by scripts/bootstrap into $BOOKIE_FLEET_JAVA_HARNESS; run with that directory and
// $BOOKIE_FLEET_BK_LIB/* on the classpath. Prints "RESULT ..." / "ACKED <id>" lines for the tests, or
// "REFUSED <BKException code> <exception>" and exits with 3 when the client raises a BKException.
// More client keys (TLS ...) come as -D system properties with -Dorg.apache.bookkeeper.conf.readsystemproperties=true
// (BookKeeper's own switch for reading them into a ClientConfiguration).
//
//   write   <zk> <root> <v2|v3> <ensemble> <wq> <aq> <digest> <password> <count>   create, add, close
//   hold    <zk> <root> <v2|v3> <ensemble> <wq> <aq> <digest> <password> <count>   add, never close, wait
//   read    <zk> <root> <v2|v3> <ledgerId> <password> <recover|norecover>           open, read all
//   digests <zk> <root> <v2|v3> <password> <ledgerId>...                            open each, print SHA-256s
//   dump    <zk> <root> <v2|v3> <password> <ledgerId>...                            metadata and every entry, in hex
//   stream  <zk> <root> <v2|v3>          a writer driven line by line on stdin (tests/support/writer_process.py)
// The ZooKeeper session timeout is 10 s, or -Dharness.zkTimeoutMs.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Enumeration;
import java.util.StringJoiner;
import org.apache.bookkeeper.client.BKException;
import org.apache.bookkeeper.client.BookKeeper;
import org.apache.bookkeeper.client.LedgerEntry;
import org.apache.bookkeeper.client.LedgerHandle;
import org.apache.bookkeeper.conf.ClientConfiguration;
import org.apache.bookkeeper.net.BookieId;

public class ClientHarness {
    public static void main(String[] args) throws Exception {
        ClientConfiguration conf = new ClientConfiguration();
        conf.setMetadataServiceUri("zk+hierarchical://" + args[1] + args[2]);
        conf.setUseV2WireProtocol("v2".equals(args[3]));
        conf.setAddEntryTimeout(10);
        conf.setReadEntryTimeout(10);
        conf.setZkTimeout(Integer.getInteger("harness.zkTimeoutMs", 10000));
        BookKeeper bk = new BookKeeper(conf);
        boolean refused = false;
        try {
            switch (args[0]) {
                case "write": write(bk, args, true); break;
                case "hold": write(bk, args, false); break;
                case "read": read(bk, args); break;
                case "digests": digests(bk, args); break;
                case "dump": dump(bk, args); break;
                case "stream": stream(bk); break;
                default: throw new IllegalArgumentException("unknown mode " + args[0]);
            }
        } catch (BKException e) {
            System.out.println("REFUSED " + e.getCode() + " " + e.getClass().getSimpleName());
            System.out.flush();
            refused = true;
        } finally {
            bk.close();
        }
        if (refused) {
            System.exit(3);
        }
    }

    static void write(BookKeeper bk, String[] a, boolean close) throws Exception {
        LedgerHandle lh = bk.createLedger(Integer.parseInt(a[4]), Integer.parseInt(a[5]), Integer.parseInt(a[6]),
                BookKeeper.DigestType.valueOf(a[7]), a[8].getBytes(StandardCharsets.UTF_8));
        System.out.println("LEDGER " + lh.getId());
        int count = Integer.parseInt(a[9]);
        for (int i = 0; i < count; i++) {
            long id = lh.addEntry(("java-" + i).getBytes(StandardCharsets.UTF_8));
            System.out.println("ACKED " + id);
            System.out.flush();
        }
        if (close) {
            lh.close();
            System.out.println("RESULT " + lh.getId() + " " + lh.getLastAddConfirmed() + " " + lh.getLength());
            return;
        }
        System.out.println("HOLDING");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);  // the test kills this process: a writer that dies without closing
    }

    static void read(BookKeeper bk, String[] a) throws Exception {
        long ledgerId = Long.parseLong(a[4]);
        byte[] password = a[5].getBytes(StandardCharsets.UTF_8);
        LedgerHandle lh = "recover".equals(a[6])
                ? bk.openLedger(ledgerId, BookKeeper.DigestType.CRC32C, password)
                : bk.openLedgerNoRecovery(ledgerId, BookKeeper.DigestType.CRC32C, password);
        long last = lh.getLastAddConfirmed();
        if (last >= 0) {
            Enumeration<LedgerEntry> entries = lh.readEntries(0, last);
            while (entries.hasMoreElements()) {
                LedgerEntry e = entries.nextElement();
                System.out.println("ENTRY " + e.getEntryId() + " " + new String(e.getEntry(), StandardCharsets.UTF_8));
            }
        }
        System.out.println("RESULT " + last + " " + lh.getLength() + " " + lh.isClosed());
        lh.close();
    }

    // "ENTRY <ledger> <entry> <sha256 of the payload>" for every entry of each ledger (opened with recovery:
    // a closed ledger stays as it is), then "RESULT <ledger> <lastAddConfirmed>".
    static void digests(BookKeeper bk, String[] a) throws Exception {
        byte[] password = a[4].getBytes(StandardCharsets.UTF_8);
        for (int i = 5; i < a.length; i++) {
            long ledgerId = Long.parseLong(a[i]);
            LedgerHandle lh = bk.openLedger(ledgerId, BookKeeper.DigestType.CRC32C, password);
            long last = lh.getLastAddConfirmed();
            if (last >= 0) {
                Enumeration<LedgerEntry> entries = lh.readEntries(0, last);
                while (entries.hasMoreElements()) {
                    LedgerEntry e = entries.nextElement();
                    byte[] sha = MessageDigest.getInstance("SHA-256").digest(e.getEntry());
                    System.out.println("ENTRY " + ledgerId + " " + e.getEntryId() + " " + HexFormat.of().formatHex(sha));
                }
            }
            System.out.println("RESULT " + ledgerId + " " + last);
            lh.close();
        }
    }

    // Each ledger as this client parses its metadata and reads its entries, opened without recovery (so the
    // run writes nothing): "ENSEMBLE <ledger> <first entry> <bookie id>,...", "CUSTOM <ledger> <key hex>
    // <value hex>", then each entry read on its own, "PAYLOAD <ledger> <entry> <payload hex>" or, when the read
    // raises, "UNREADABLE <ledger> <entry> <BKException code>"; last "RESULT <ledger> <lastAddConfirmed>
    // <length> <closed>".
    static void dump(BookKeeper bk, String[] a) throws Exception {
        byte[] password = a[4].getBytes(StandardCharsets.UTF_8);
        HexFormat hex = HexFormat.of();
        for (int i = 5; i < a.length; i++) {
            long ledgerId = Long.parseLong(a[i]);
            LedgerHandle lh = bk.openLedgerNoRecovery(ledgerId, BookKeeper.DigestType.CRC32C, password);
            lh.getLedgerMetadata().getAllEnsembles().forEach((first, ensemble) -> {
                StringJoiner ids = new StringJoiner(",");
                for (BookieId id : ensemble) {
                    ids.add(id.toString());
                }
                System.out.println("ENSEMBLE " + ledgerId + " " + first + " " + ids);
            });
            lh.getCustomMetadata().forEach((key, value) -> System.out.println(
                    "CUSTOM " + ledgerId + " " + hex.formatHex(key.getBytes(StandardCharsets.UTF_8)) + " "
                    + hex.formatHex(value)));
            long last = lh.getLastAddConfirmed();
            for (long entry = 0; entry <= last; entry++) {
                try {
                    LedgerEntry e = lh.readEntries(entry, entry).nextElement();
                    System.out.println("PAYLOAD " + ledgerId + " " + entry + " " + hex.formatHex(e.getEntry()));
                } catch (BKException e) {
                    System.out.println("UNREADABLE " + ledgerId + " " + entry + " " + e.getCode());
                }
            }
            System.out.println("RESULT " + ledgerId + " " + last + " " + lh.getLength() + " " + lh.isClosed());
            lh.close();
        }
    }

    // The writer of the fault scenarios, answering one JSON object per line on stdout as our client's does
    // (tests/support/writer_process.py has the commands): create <ensemble> <wq> <aq>; append <count> <seed>
    // (in flight together, each answered as it completes, then {"done": "append"}, while the next command is read);
    // close (after the pending appends); ensembles. Log lines may come between the answers: they do not start
    // with "{".
    static void stream(BookKeeper bk) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        LedgerHandle lh = null;
        List<CompletableFuture<Void>> batches = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split("\\s+");
            if ("create".equals(w[0])) {
                lh = bk.createLedger(Integer.parseInt(w[1]), Integer.parseInt(w[2]), Integer.parseInt(w[3]),
                        BookKeeper.DigestType.CRC32C, new byte[0]);
                say("{\"ledger\": " + lh.getId() + "}");
            } else if ("append".equals(w[0]) && lh != null) {
                batches.add(appendBatch(lh, Integer.parseInt(w[1]), Long.parseLong(w[2])));
            } else if ("close".equals(w[0]) && lh != null) {
                CompletableFuture.allOf(batches.toArray(new CompletableFuture[0])).join();
                try {
                    lh.close();
                    say("{\"close\": {\"ok\": true, \"last\": " + lh.getLastAddConfirmed() + ", \"length\": "
                            + lh.getLength() + "}}");
                } catch (BKException e) {
                    say("{\"close\": {\"ok\": false, \"error\": \"" + quoted(e.toString()) + "\"}}");
                }
            } else if ("ensembles".equals(w[0]) && lh != null) {
                StringJoiner all = new StringJoiner(", ", "{\"ensembles\": {", "}}");
                lh.getLedgerMetadata().getAllEnsembles().forEach((first, ensemble) -> {
                    StringJoiner ids = new StringJoiner(", ", "[", "]");
                    for (BookieId id : ensemble) {
                        ids.add("\"" + id + "\"");
                    }
                    all.add("\"" + first + "\": " + ids);
                });
                say(all.toString());
            } else {
                say("{\"error\": \"unknown command or no ledger yet: " + quoted(line) + "\"}");
            }
        }
        CompletableFuture.allOf(batches.toArray(new CompletableFuture[0])).join();
    }

    static CompletableFuture<Void> appendBatch(LedgerHandle lh, int count, long seed) {
        Random payloads = new Random(seed);
        CompletableFuture<Void> done = new CompletableFuture<>();
        AtomicInteger left = new AtomicInteger(count);
        for (int i = 0; i < count; i++) {
            byte[] data = new byte[100 + payloads.nextInt(1900)];
            payloads.nextBytes(data);
            String hex = HexFormat.of().formatHex(data);
            lh.asyncAddEntry(data, (rc, handle, entryId, ctx) -> {
                if (rc == BKException.Code.OK) {
                    say("{\"append\": {\"ok\": true, \"entry\": " + entryId + ", \"data\": \"" + hex + "\"}}");
                } else {
                    say("{\"append\": {\"ok\": false, \"entry\": " + (entryId >= 0 ? entryId : "null")
                            + ", \"data\": \"" + hex + "\", \"error\": \"" + quoted(BKException.getMessage(rc)) + "\"}}");
                }
                if (left.decrementAndGet() == 0) {
                    say("{\"done\": \"append\"}");
                    done.complete(null);
                }
            }, null);
        }
        if (count == 0) {
            say("{\"done\": \"append\"}");
            done.complete(null);
        }
        return done;
    }

    static synchronized void say(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quoted(String text) {
        return text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ");
    }
}
