import java.nio.file.Files;
import java.util.List;

import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.Split;

/**
 * Timings of Paimon Java with a warm JVM, for bench/bench_java.py: the best of "rounds" runs,
 * after one untimed warm-up. Kinds: plan (a new catalog without caches, the table, then
 * newScan().plan()), file_index_table (plan plus
 * FileIndexPredicate on every file), blob (FileIndexPredicate on one .index file's bytes, a fresh
 * reader per operation: the bloom test and the bitmap lookup), dv (read every deletion vector
 * of the plan and ask isDeleted for each position).
 */
final class OracleBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    interface Op {
        long run() throws Exception;
    }

    static ObjectNode run(JsonNode req, FileStoreTable t) throws Exception {
        String kind = req.get("kind").asText();
        int rounds = req.path("rounds").asInt(5);
        Predicate p = req.hasNonNull("predicate") ? PaimonOracle.predicate(t.rowType(), req.get("predicate")) : null;
        Op op;
        switch (kind) {
            case "plan":
                // cold like ours: a new catalog without its caches, the table loaded, then planned
                op = () -> {
                    org.apache.paimon.options.Options o = new org.apache.paimon.options.Options();
                    o.set("warehouse", req.get("warehouse").asText());
                    o.set("cache-enabled", "false");
                    org.apache.paimon.catalog.Catalog c = org.apache.paimon.catalog.CatalogFactory.createCatalog(
                            org.apache.paimon.catalog.CatalogContext.create(o));
                    FileStoreTable fresh = (FileStoreTable) c.getTable(PaimonOracle.ident(req));
                    long n = 0;
                    for (Split s : fresh.newReadBuilder().newScan().plan().splits()) {
                        n += ((DataSplit) s).dataFiles().size();
                    }
                    return n;
                };
                break;
            case "file_index_table":
                op = () -> {
                    long kept = 0;
                    for (Split sp : t.newReadBuilder().newScan().plan().splits()) {
                        DataSplit s = (DataSplit) sp;
                        for (DataFileMeta f : s.dataFiles()) {
                            String r = PaimonOracle.fileIndexAnswer(t, s, f, p);
                            kept += "SKIP".equals(r) ? 0 : 1;
                        }
                    }
                    return kept;
                };
                break;
            case "blob": {
                byte[] bytes = Files.readAllBytes(java.nio.file.Paths.get(req.get("path").asText()));
                int ops = req.path("ops").asInt(10000);
                op = () -> {
                    long kept = 0;
                    for (int i = 0; i < ops; i++) {
                        try (FileIndexPredicate fip = new FileIndexPredicate(bytes, t.rowType())) {
                            kept += fip.testPredicate(p) ? 1 : 0;
                        }
                    }
                    return kept;
                };
                break;
            }
            case "dv": {
                // the plan is made once, untimed: this times reading and asking the vectors
                List<DeletionFile> files = new java.util.ArrayList<>();
                List<Long> rowCounts = new java.util.ArrayList<>();
                for (Split sp : t.newReadBuilder().newScan().plan().splits()) {
                    DataSplit s = (DataSplit) sp;
                    List<DeletionFile> dfs = s.deletionFiles().orElse(null);
                    for (int k = 0; dfs != null && k < dfs.size(); k++) {
                        if (dfs.get(k) != null) {
                            files.add(dfs.get(k));
                            rowCounts.add(s.dataFiles().get(k).rowCount());
                        }
                    }
                }
                op = () -> {
                    long deleted = 0;
                    for (int k = 0; k < files.size(); k++) {
                        DeletionVector dv = DeletionVector.read(t.fileIO(), files.get(k));
                        long rows = rowCounts.get(k);
                        for (long pos = 0; pos < rows; pos++) {
                            deleted += dv.isDeleted(pos) ? 1 : 0;
                        }
                    }
                    return deleted;
                };
                break;
            }
            default:
                throw new IllegalArgumentException("bench kind " + kind);
        }
        long result = op.run();
        double best = Double.MAX_VALUE;
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            result = op.run();
            best = Math.min(best, (System.nanoTime() - t0) / 1e9);
        }
        ObjectNode ans = JSON.createObjectNode();
        ans.put("seconds", best);
        ans.put("result", result);
        return ans;
    }


    private OracleBench() {}
}
