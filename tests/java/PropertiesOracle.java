import java.io.FileInputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.TreeSet;

/**
 * Prints every key and value of a properties file exactly as java.util.Properties.load reads it, one entry per
 * line as "<key length>:<key><value length>:<value>" (lengths in UTF-16 units), keys sorted: the oracle the
 * bookie's bk_server.conf reader is compared with.
 */
public final class PropertiesOracle {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        for (String key : new TreeSet<>(props.stringPropertyNames())) {
            String value = props.getProperty(key);
            out.print(key.length() + ":" + key + value.length() + ":" + value + "\n");
        }
    }
}
