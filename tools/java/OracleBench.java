import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;

/** Timings of Paimon Java operations with a warm JVM, for bench/bench_java.py. */
final class OracleBench {
    static ObjectNode run(JsonNode req, FileStoreTable t) throws Exception {
        throw new UnsupportedOperationException("bench");
    }

    private OracleBench() {}
}
