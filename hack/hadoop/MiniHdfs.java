import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS for tests: Hadoop's MiniDFSCluster (one NameNode, one DataNode, in this JVM) on loopback ports.
 *
 * <p>Usage: {@code MiniHdfs BASE_DIR DETAILS_FILE}. Once the cluster serves requests, DETAILS_FILE holds
 * {@code {"rpc_port": N, "http_port": N}} (the NameNode's RPC port and its HTTP port, which serves WebHDFS).
 * The cluster runs until standard input reaches end of file, so it ends with the process that started it
 * even when that one dies without cleaning up, or until SIGTERM.
 */
public final class MiniHdfs {
  private MiniHdfs() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: MiniHdfs BASE_DIR DETAILS_FILE");
      System.exit(2);
    }
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(args[0]).getAbsolutePath());
    // One DataNode: a replication factor above 1 would leave every block under-replicated.
    conf.setInt("dfs.replication", 1);
    // A WebHDFS upload ends with the DataNode's client closing the file, which polls the NameNode for the
    // last block from 400 ms on: most of the time of a test copying small files in.
    conf.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 10);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(1).format(true).build();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
    cluster.waitActive();
    String details = String.format("{\"rpc_port\": %d, \"http_port\": %d}%n", cluster.getNameNodePort(),
        cluster.getNameNode().getHttpAddress().getPort());
    // Written whole then renamed: whoever polls for the file never reads half of it.
    Path target = Path.of(args[1]);
    Path tmp = Path.of(args[1] + ".tmp");
    Files.writeString(tmp, details, StandardCharsets.UTF_8);
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    waitForEndOfInput(System.in);
    System.exit(0);  // runs the shutdown hook
  }

  private static void waitForEndOfInput(InputStream in) throws IOException {
    byte[] buf = new byte[256];
    while (in.read(buf) >= 0) {
      // Whatever is sent is ignored: only the end of the stream means something.
    }
  }
}
