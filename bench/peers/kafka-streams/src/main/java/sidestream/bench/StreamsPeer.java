package sidestream.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * The Kafka Streams peer of the sidestream benchmark (bench/README.md).
 *
 * <p>W1: parse each JSON log event once, records that do not parse as a JSON object go to the
 * dead-letter topic PREFIX.dirty with their original bytes, the rest are split by level into
 * PREFIX.error (re-keyed by service), PREFIX.warn and PREFIX.main (everything else), the values
 * passed through unchanged. W2: W1 plus a count per service in 10 s tumbling event-time windows
 * (event time from the "ts" field; a record without a usable one goes to the dead-letter topic) with
 * a 3 s grace, results to PREFIX.window. Kafka Streams
 * drops records past the grace (a metric, no topic): it has no late route.
 *
 * <p>Usage: StreamsPeer BROKERS INPUT PREFIX APPLICATION_ID w1|w2 exactly_once_v2|at_least_once
 */
public final class StreamsPeer {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** One input record after its single parse: the original bytes and what routing needs. */
  record Parsed(byte[] raw, boolean ok, String level, String service, long ts) {
    static Parsed of(byte[] v) {
      try {
        JsonNode n = v == null ? null : JSON.readTree(v);
        if (n == null || !n.isObject()) {
          return new Parsed(v, false, null, null, -1);
        }
        JsonNode level = n.get("level");
        JsonNode service = n.get("service");
        JsonNode ts = n.get("ts");
        return new Parsed(v, true, level == null ? null : level.asText(),
            service == null ? "" : service.asText(),
            ts != null && ts.canConvertToLong() ? ts.asLong() : -1);
      } catch (Exception e) { // invalid JSON or UTF-8: the dead-letter topic
        return new Parsed(v, false, null, null, -1);
      }
    }
  }

  /** Parses once and, for W2, sets the record's timestamp to the event time in "ts". */
  static final class Parse implements FixedKeyProcessor<byte[], byte[], Parsed> {
    private final boolean eventTime;
    private FixedKeyProcessorContext<byte[], Parsed> ctx;

    Parse(boolean eventTime) {
      this.eventTime = eventTime;
    }

    @Override
    public void init(FixedKeyProcessorContext<byte[], Parsed> ctx) {
      this.ctx = ctx;
    }

    @Override
    public void process(FixedKeyRecord<byte[], byte[]> r) {
      Parsed p = Parsed.of(r.value());
      long ts = r.timestamp();
      if (eventTime && p.ok()) {
        if (p.ts() < 0) { // no usable event time: the dead-letter topic, as sidestream does
          p = new Parsed(p.raw(), false, null, null, -1);
        } else {
          ts = p.ts();
        }
      }
      ctx.forward(r.withValue(p).withTimestamp(ts));
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println("usage: StreamsPeer BROKERS INPUT PREFIX APPLICATION_ID w1|w2 exactly_once_v2|at_least_once");
      System.exit(2);
    }
    String brokers = args[0], input = args[1], prefix = args[2], appId = args[3], workload = args[4], guarantee = args[5];
    boolean w2 = workload.equals("w2");
    Serde<byte[]> bytes = Serdes.ByteArray();

    StreamsBuilder b = new StreamsBuilder();
    KStream<byte[], Parsed> parsed = b.stream(input, Consumed.with(bytes, bytes))
        .processValues(() -> new Parse(w2), Named.as("parse"));
    Map<String, KStream<byte[], Parsed>> branches = parsed.split(Named.as("route-"))
        .branch((k, p) -> !p.ok(), Branched.as("dirty"))
        .branch((k, p) -> "ERROR".equals(p.level()), Branched.as("error"))
        .branch((k, p) -> "WARN".equals(p.level()), Branched.as("warn"))
        .defaultBranch(Branched.as("main"));
    branches.get("route-dirty").mapValues(Parsed::raw).to(prefix + ".dirty", Produced.with(bytes, bytes));
    branches.get("route-error")
        .map((k, p) -> KeyValue.pair(p.service().getBytes(StandardCharsets.UTF_8), p.raw()))
        .to(prefix + ".error", Produced.with(bytes, bytes));
    branches.get("route-warn").mapValues(Parsed::raw).to(prefix + ".warn", Produced.with(bytes, bytes));
    branches.get("route-main").mapValues(Parsed::raw).to(prefix + ".main", Produced.with(bytes, bytes));

    if (w2) {
      parsed.filter((k, p) -> p.ok())
          .map((k, p) -> KeyValue.pair(p.service().getBytes(StandardCharsets.UTF_8), p.raw()))
          .groupByKey(Grouped.with("by-service", bytes, bytes))
          .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(3)))
          .count()
          .toStream()
          .map((wk, n) -> KeyValue.pair(
              (new String(wk.key(), StandardCharsets.UTF_8) + "@" + wk.window().start()).getBytes(StandardCharsets.UTF_8),
              ("{\"count\":" + n + "}").getBytes(StandardCharsets.UTF_8)))
          .to(prefix + ".window", Produced.with(bytes, bytes));
    }

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/sidestream-bench-streams/" + appId);
    p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

    KafkaStreams streams = new KafkaStreams(b.build(), p);
    CountDownLatch done = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(20));
      done.countDown();
    }));
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    streams.start();
    System.out.println("{\"started\":true}");
    done.await();
  }
}
