import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

/**
 * Apache Pulsar's own Java client, driven by the Pulsar tests (tests/pulsar). One line per event on stdout,
 * so the Python side checks what was acknowledged and what comes back without knowing Java.
 *
 * <pre>
 * produce URL TOPIC COUNT KEYS MAX_SIZE RATE   COUNT messages (0: until a line "stop" on stdin), keyed
 *                                              "k" + seq % KEYS, batched; prints "ACK seq key sha256"
 *                                              when Pulsar acknowledges one, "FAIL seq error" when it does not
 * consume URL TOPIC SUB COUNT IDLE_S           receives (from the earliest message) until COUNT messages or
 *                                              IDLE_S seconds without one; prints "MSG seq key sha256", acks
 * </pre>
 * Payloads are a function of seq (1..MAX_SIZE bytes), so a consumer's hash proves the bytes came back intact.
 */
public final class PulsarHarness {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        switch (args[0]) {
            case "produce" -> produce(args);
            case "consume" -> consume(args);
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: produce URL TOPIC COUNT KEYS MAX_SIZE RATE | consume URL TOPIC SUB COUNT IDLE_S");
        System.exit(2);
    }

    static byte[] payload(long seq, int maxSize) {
        Random random = new Random(seq * 7919L + 17);
        byte[] bytes = new byte[1 + random.nextInt(maxSize)];
        random.nextBytes(bytes);
        return bytes;
    }

    static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    private static synchronized void emit(String line) {
        OUT.println(line);
        OUT.flush();
    }

    private static PulsarClient client(String url) throws Exception {
        return PulsarClient.builder().serviceUrl(url).operationTimeout(60, TimeUnit.SECONDS).build();
    }

    private static void produce(String[] a) throws Exception {
        if (a.length != 7) {
            usage();
        }
        long count = Long.parseLong(a[3]);
        int keys = Integer.parseInt(a[4]);
        int maxSize = Integer.parseInt(a[5]);
        double rate = Double.parseDouble(a[6]);
        AtomicBoolean stop = new AtomicBoolean(false);
        if (count == 0) {
            Thread reader = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null && !line.strip().equals("stop")) {
                        // only "stop" (or the end of stdin) matters
                    }
                } catch (Exception e) {
                    // stdin gone: stop as well
                }
                stop.set(true);
            });
            reader.setDaemon(true);
            reader.start();
        }
        Semaphore inFlight = new Semaphore(1000);  // bounded: a stalled broker holds the producer, not the heap
        try (PulsarClient client = client(a[1]);
             Producer<byte[]> producer = client.newProducer().topic(a[2]).enableBatching(true)
                 .batchingMaxMessages(50).batchingMaxPublishDelay(5, TimeUnit.MILLISECONDS)
                 .sendTimeout(120, TimeUnit.SECONDS).blockIfQueueFull(true).create()) {
            long started = System.nanoTime();
            CompletableFuture<?> last = CompletableFuture.completedFuture(null);
            for (long seq = 0; count == 0 ? !stop.get() : seq < count; seq++) {
                if (rate > 0) {
                    long due = started + (long) (seq * 1e9 / rate);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                }
                final long s = seq;
                final String key = "k" + (seq % keys);
                final byte[] value = payload(seq, maxSize);
                final String hash = sha256(value);
                inFlight.acquire();
                last = producer.newMessage().key(key).value(value).property("seq", Long.toString(seq)).sendAsync()
                    .whenComplete((id, err) -> {
                        inFlight.release();
                        emit(err == null ? "ACK " + s + " " + key + " " + hash
                                         : "FAIL " + s + " " + err.toString().replace('\n', ' '));
                    });
            }
            producer.flush();
            inFlight.acquire(1000);
            last.exceptionally(e -> null).join();
        }
        emit("DONE");
    }

    private static void consume(String[] a) throws Exception {
        if (a.length != 6) {
            usage();
        }
        long count = Long.parseLong(a[4]);
        int idle = Integer.parseInt(a[5]);
        long received = 0;
        try (PulsarClient client = client(a[1]);
             Consumer<byte[]> consumer = client.newConsumer().topic(a[2]).subscriptionName(a[3])
                 .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).receiverQueueSize(500)
                 .subscribe()) {
            while (received < count) {
                Message<byte[]> m = consumer.receive(idle, TimeUnit.SECONDS);
                if (m == null) {
                    break;
                }
                emit("MSG " + m.getProperty("seq") + " " + m.getKey() + " " + sha256(m.getValue()));
                consumer.acknowledge(m);
                received++;
            }
        }
        emit("DONE " + received);
    }
}
