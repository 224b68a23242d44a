import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.TreeSet;
import org.apache.bookkeeper.conf.ServerConfiguration;

/**
 * Prints every key of a bk_server.conf and its value as Apache BookKeeper's bookie reads them
 * (ServerConfiguration.loadConf, then getString), one entry per line as "<key length>:<key><value length>:<value>"
 * (lengths in code points), keys sorted: the oracle the operator's rendering of the file is checked against.
 */
public final class BookieConfOracle {
    public static void main(String[] args) throws Exception {
        ServerConfiguration conf = new ServerConfiguration();
        conf.loadConf(new File(args[0]).toURI().toURL());
        TreeSet<String> keys = new TreeSet<>();
        for (Iterator<String> it = conf.getKeys(); it.hasNext();) {
            keys.add(it.next());
        }
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        for (String key : keys) {
            String value = conf.getString(key);
            out.print(length(key) + ":" + key + length(value) + ":" + value + "\n");
        }
    }

    private static int length(String s) {
        return s.codePointCount(0, s.length());
    }
}
