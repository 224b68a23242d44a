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
import java.nio.charset.StandardCharsets;
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
        conf.setZkTimeout(10000);
        BookKeeper bk = new BookKeeper(conf);
        boolean refused = false;
        try {
            switch (args[0]) {
                case "write": write(bk, args, true); break;
                case "hold": write(bk, args, false); break;
                case "read": read(bk, args); break;
                case "digests": digests(bk, args); break;
                case "dump": dump(bk, args); break;
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
}
