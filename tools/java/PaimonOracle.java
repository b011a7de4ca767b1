import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.fs.Path;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

/**
 * Paimon Java as an oracle for indexcore's differential tests and benches: one JVM reads JSON
 * requests, one per stdin line, and answers each with one JSON line on stdout.
 *
 * <p>Requests: {"op": "write", "warehouse", "table", "spec"} writes a table from a spec;
 * {"op": "query", "warehouse", "table", "predicate"} answers a predicate (rows of a full read
 * under Predicate.test, the files of the filtered plan, FileIndexPredicate per file, DV
 * cardinalities); {"op": "hash", ...} lists the dynamic-bucket hash index; {"op": "bench", ...}
 * times operations with a warm JVM. Values travel as JSON: DATE as epoch days, DECIMAL as a
 * string, TIMESTAMP as epoch milliseconds.
 */
public final class PaimonOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, Catalog> CATALOGS = new HashMap<>();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = handle(JSON.readTree(line));
                answer.put("ok", true);
            } catch (Throwable e) {
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                java.io.StringWriter sw = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(sw));
                answer.put("error", sw.toString());
            }
            out.println(JSON.writeValueAsString(answer));
        }
    }

    private static ObjectNode handle(JsonNode req) throws Exception {
        String op = req.get("op").asText();
        switch (op) {
            case "write":
                return write(req);
            case "query":
                return query(req);
            case "hash":
                return hash(req);
            case "bench":
                return OracleBench.run(req, table(req));
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static Catalog catalog(String warehouse) {
        return CATALOGS.computeIfAbsent(warehouse, w -> {
            Options o = new Options();
            o.set("warehouse", w);
            return CatalogFactory.createCatalog(CatalogContext.create(o));
        });
    }

    static Identifier ident(JsonNode req) {
        return Identifier.fromString(req.get("table").asText());
    }

    static FileStoreTable table(JsonNode req) throws Exception {
        Catalog c = catalog(req.get("warehouse").asText());
        c.invalidateTable(ident(req));
        return (FileStoreTable) c.getTable(ident(req));
    }

    static DataType type(String sql) {
        String s = sql.trim().toUpperCase();
        if (s.startsWith("DECIMAL")) {
            String[] ps = s.substring(s.indexOf('(') + 1, s.indexOf(')')).split(",");
            return DataTypes.DECIMAL(Integer.parseInt(ps[0].trim()), Integer.parseInt(ps[1].trim()));
        }
        switch (s) {
            case "INT": return DataTypes.INT();
            case "BIGINT": return DataTypes.BIGINT();
            case "STRING": return DataTypes.STRING();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "DATE": return DataTypes.DATE();
            case "TIMESTAMP": return DataTypes.TIMESTAMP(3);
            case "BOOLEAN": return DataTypes.BOOLEAN();
            default: throw new IllegalArgumentException("type " + sql);
        }
    }

    /** A JSON value as Paimon's internal object of that type. */
    static Object internal(DataType t, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (t.getTypeRoot()) {
            case INTEGER: case DATE: return v.asInt();
            case BIGINT: return v.asLong();
            case VARCHAR: case CHAR: return BinaryString.fromString(v.asText());
            case DOUBLE: return v.asDouble();
            case BOOLEAN: return v.asBoolean();
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                return Decimal.fromBigDecimal(new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE: return Timestamp.fromEpochMillis(v.asLong());
            default: throw new IllegalArgumentException("type " + t);
        }
    }

    static void putValue(ArrayNode a, DataType t, Object o) {
        if (o == null) {
            a.addNull();
            return;
        }
        switch (t.getTypeRoot()) {
            case INTEGER: case DATE: a.add((Integer) o); break;
            case BIGINT: a.add((Long) o); break;
            case VARCHAR: case CHAR: a.add(o.toString()); break;
            case DOUBLE: a.add((Double) o); break;
            case BOOLEAN: a.add((Boolean) o); break;
            case DECIMAL: a.add(((Decimal) o).toBigDecimal().toPlainString()); break;
            case TIMESTAMP_WITHOUT_TIME_ZONE: a.add(((Timestamp) o).getMillisecond()); break;
            default: a.add(o.toString());
        }
    }

    static ArrayNode rowJson(RowType rt, InternalRow row) {
        ArrayNode a = JSON.createArrayNode();
        List<DataField> fs = rt.getFields();
        for (int i = 0; i < fs.size(); i++) {
            putValue(a, fs.get(i).type(), InternalRow.createFieldGetter(fs.get(i).type(), i).getFieldOrNull(row));
        }
        return a;
    }

    // ---------------------------------------------------------------- write

    private static ObjectNode write(JsonNode req) throws Exception {
        JsonNode spec = req.get("spec");
        Catalog c = catalog(req.get("warehouse").asText());
        Identifier id = ident(req);
        c.createDatabase(id.getDatabaseName(), true);
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode col : spec.get("columns")) {
            b.column(col.get("name").asText(), type(col.get("type").asText()));
        }
        List<String> parts = new ArrayList<>();
        spec.path("partition_keys").forEach(n -> parts.add(n.asText()));
        b.partitionKeys(parts);
        List<String> pks = new ArrayList<>();
        spec.path("primary_keys").forEach(n -> pks.add(n.asText()));
        if (!pks.isEmpty()) {
            b.primaryKey(pks);
        }
        spec.path("options").fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        c.createTable(id, b.build(), false);
        String tmp = req.path("tmp").asText(System.getProperty("java.io.tmpdir"));
        for (JsonNode commit : spec.get("commits")) {
            JsonNode change = commit.get("add_column");
            if (change != null) {
                c.alterTable(id, SchemaChange.addColumn(change.get("name").asText(), type(change.get("type").asText())), false);
            }
            c.invalidateTable(id);
            FileStoreTable t = (FileStoreTable) c.getTable(id);
            RowType rt = t.rowType();
            BatchWriteBuilder wb = t.newBatchWriteBuilder();
            try (IOManager io = IOManager.create(tmp);
                 TableWriteImpl<?> w = (TableWriteImpl<?>) wb.newWrite();
                 BatchTableCommit cm = wb.newCommit()) {
                w.withIOManager(io);
                Map<String, Object[]> touched = new LinkedHashMap<>();
                for (JsonNode r : commit.path("rows")) {
                    JsonNode vals = r.get("values");
                    GenericRow row = new GenericRow(rt.getFieldCount());
                    row.setRowKind("delete".equals(r.path("kind").asText()) ? RowKind.DELETE : RowKind.INSERT);
                    for (int i = 0; i < rt.getFieldCount(); i++) {
                        row.setField(i, i < vals.size() ? internal(rt.getTypeAt(i), vals.get(i)) : null);
                    }
                    BinaryRow part = w.getPartition(row).copy();
                    int bucket;
                    if (r.has("bucket")) {
                        bucket = r.get("bucket").asInt();
                        w.write(row, bucket);
                    } else {
                        bucket = t.bucketSpec().getNumBuckets() > 0 ? w.getBucket(row) : 0;
                        w.write(row);
                    }
                    touched.put(part.hashCode() + "/" + part.toString() + "/" + bucket, new Object[] {part, bucket});
                }
                if (commit.path("compact").asBoolean(false)) {
                    for (Object[] pb : touched.values()) {
                        w.compact((BinaryRow) pb[0], (Integer) pb[1], true);
                    }
                }
                cm.commit(w.prepareCommit());
            }
        }
        ObjectNode ans = JSON.createObjectNode();
        ans.put("snapshot", ((FileStoreTable) c.getTable(id)).snapshotManager().latestSnapshotId());
        return ans;
    }

    // ---------------------------------------------------------------- predicates

    static Predicate predicate(RowType rt, JsonNode p) {
        String op = p.get("op").asText();
        if (op.equals("and") || op.equals("or")) {
            List<Predicate> kids = new ArrayList<>();
            for (JsonNode k : p.get("children")) {
                kids.add(predicate(rt, k));
            }
            return op.equals("and") ? PredicateBuilder.and(kids) : PredicateBuilder.or(kids);
        }
        if (op.equals("not")) {
            return predicate(rt, p.get("children").get(0)).negate()
                    .orElseThrow(() -> new IllegalArgumentException("no negation for " + p));
        }
        PredicateBuilder pb = new PredicateBuilder(rt);
        int i = pb.indexOf(p.get("field").asText());
        DataType t = rt.getTypeAt(i);
        List<Object> lits = new ArrayList<>();
        p.path("literals").forEach(v -> lits.add(internal(t, v)));
        switch (op) {
            case "equal": return pb.equal(i, lits.get(0));
            case "notEqual": return pb.notEqual(i, lits.get(0));
            case "lessThan": return pb.lessThan(i, lits.get(0));
            case "lessOrEqual": return pb.lessOrEqual(i, lits.get(0));
            case "greaterThan": return pb.greaterThan(i, lits.get(0));
            case "greaterOrEqual": return pb.greaterOrEqual(i, lits.get(0));
            case "isNull": return pb.isNull(i);
            case "isNotNull": return pb.isNotNull(i);
            case "in": return pb.in(i, lits);
            case "notIn": return pb.notIn(i, lits);
            case "between": return pb.between(i, lits.get(0), lits.get(1));
            case "startsWith": return pb.startsWith(i, lits.get(0));
            case "endsWith": return pb.endsWith(i, lits.get(0));
            case "contains": return pb.contains(i, lits.get(0));
            default: throw new IllegalArgumentException("op " + op);
        }
    }

    // ---------------------------------------------------------------- query

    static String fileIndexAnswer(FileStoreTable t, DataSplit s, DataFileMeta f, Predicate p) throws Exception {
        byte[] embedded = f.embeddedIndex();
        if (embedded != null) {
            try (FileIndexPredicate fip = new FileIndexPredicate(embedded, t.rowType())) {
                return fip.testPredicate(p) ? "REMAIN" : "SKIP";
            }
        }
        for (String extra : f.extraFiles()) {
            if (extra.endsWith(".index")) {
                Path path = new Path(s.bucketPath(), extra);
                try (FileIndexPredicate fip = new FileIndexPredicate(path, t.fileIO(), t.rowType())) {
                    return fip.testPredicate(p) ? "REMAIN" : "SKIP";
                }
            }
        }
        return null;
    }

    /** Rows of the file itself (no merge, no DV) that satisfy p, and their positions: what its index must keep. */
    static long matchingRawRows(FileStoreTable t, DataSplit s, DataFileMeta f, Predicate p, ArrayNode positions)
            throws Exception {
        DataSplit one = DataSplit.builder().withSnapshot(s.snapshotId()).withPartition(s.partition())
                .withBucket(s.bucket()).withBucketPath(s.bucketPath()).withDataFiles(List.of(f))
                .rawConvertible(true).build();
        long[] n = {0, 0};
        try (RecordReader<InternalRow> r = t.newReadBuilder().newRead().createReader(one)) {
            r.forEachRemaining(row -> {
                if (p.test(row)) {
                    n[0]++;
                    positions.add(n[1]);
                }
                n[1]++;
            });
        }
        return n[0];
    }

    private static ObjectNode query(JsonNode req) throws Exception {
        FileStoreTable t = table(req);
        RowType rt = t.rowType();
        Predicate p = req.hasNonNull("predicate") ? predicate(rt, req.get("predicate")) : null;
        ObjectNode ans = JSON.createObjectNode();
        ReadBuilder full = t.newReadBuilder();
        List<Split> splits = full.newScan().plan().splits();
        ArrayNode rows = ans.putArray("rows");
        try (RecordReader<InternalRow> r = full.newRead().createReader(splits)) {
            r.forEachRemaining(row -> {
                if (p == null || p.test(row)) {
                    rows.add(rowJson(rt, row));
                }
            });
        }
        ObjectNode files = ans.putObject("files");
        for (Split sp : splits) {
            DataSplit s = (DataSplit) sp;
            List<DeletionFile> dfs = s.deletionFiles().orElse(null);
            for (int k = 0; k < s.dataFiles().size(); k++) {
                DataFileMeta f = s.dataFiles().get(k);
                ObjectNode fo = files.putObject(f.fileName());
                fo.put("bucket", s.bucket());
                fo.put("level", f.level());
                fo.put("row_count", f.rowCount());
                DeletionFile df = dfs == null ? null : dfs.get(k);
                fo.put("dv_cardinality", df == null ? 0 : DeletionVector.read(t.fileIO(), df).getCardinality());
                if (p != null) {
                    ArrayNode positions = fo.putArray("matching_positions");
                    fo.put("matching_raw_rows", matchingRawRows(t, s, f, p, positions));
                    String fi = fileIndexAnswer(t, s, f, p);
                    if (fi == null) {
                        fo.putNull("file_index");
                    } else {
                        fo.put("file_index", fi);
                    }
                }
            }
        }
        if (p != null) {
            ArrayNode plan = ans.putArray("plan_files");
            for (Split sp : t.newReadBuilder().withFilter(p).newScan().plan().splits()) {
                for (DataFileMeta f : ((DataSplit) sp).dataFiles()) {
                    plan.add(f.fileName());
                }
            }
        }
        return ans;
    }

    private static ObjectNode hash(JsonNode req) throws Exception {
        FileStoreTable t = table(req);
        IndexFileHandler h = t.store().newIndexFileHandler();
        RowType pt = t.schema().logicalPartitionType();
        ObjectNode ans = JSON.createObjectNode();
        ArrayNode out = ans.putArray("buckets");
        ArrayNode all = ans.putArray("index_files");
        for (IndexManifestEntry e : h.scanEntries()) {
            ObjectNode a = all.addObject();
            a.put("index_type", e.indexFile().indexType());
            a.put("file_name", e.indexFile().fileName());
            a.put("row_count", e.indexFile().rowCount());
            a.put("bucket", e.bucket());
            if (!e.indexFile().indexType().equals("HASH")) {
                continue;
            }
            ObjectNode o = out.addObject();
            o.set("partition", rowJson(pt, e.partition()));
            o.put("bucket", e.bucket());
            o.put("file", e.indexFile().fileName());
            o.put("row_count", e.indexFile().rowCount());
            ArrayNode hs = o.putArray("hashes");
            for (int v : h.readHashIndexList(e.indexFile())) {
                hs.add(v);
            }
        }
        return ans;
    }

    private PaimonOracle() {}
}
