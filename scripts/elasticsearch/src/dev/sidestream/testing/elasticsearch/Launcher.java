package dev.sidestream.testing.elasticsearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.Node;
import org.elasticsearch.transport.Netty4Plugin;

/**
 * One Elasticsearch node in this JVM, without a distribution: the node's
 * protected constructor takes the Netty 4 module as a classpath plugin (the
 * trick of the test framework's MockNode), so HTTP and transport load from
 * the classpath. No security manager, no bootstrap checks: a test server on
 * loopback, never a production one.
 *
 * Arguments: HOME HTTP_PORT TRANSPORT_PORT. Data and logs live under HOME.
 * SIGTERM closes the node (the JVM's shutdown hook).
 */
public final class Launcher extends Node {
    private Launcher(Environment env) {
        super(env, List.of(Netty4Plugin.class), true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: Launcher HOME HTTP_PORT TRANSPORT_PORT");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        for (String d : List.of("config", "data", "logs", "plugins", "modules")) {
            Files.createDirectories(home.resolve(d));
        }
        Settings settings = Settings.builder()
            .put("cluster.name", "sidestream-it")
            .put("node.name", "sidestream-it")
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("network.host", "127.0.0.1")
            .put("discovery.type", "single-node")
            .put("http.type", "netty4")
            .put("transport.type", "netty4")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", true)
            .build();
        Node node = new Launcher(new Environment(settings, home.resolve("config")));
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                closed.countDown();
            }
        }));
        node.start();
        System.out.println("sidestream-elasticsearch: started");
        closed.await();
    }
}
