package ckpt.flink;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;

/** JSON through the Jackson that every flink-dist jar shades (same package in 1.11, 1.20, 2.3). */
public final class Json {
    private Json() {}

    public static final ObjectMapper M = new ObjectMapper();

    public static ObjectNode obj() {
        return M.createObjectNode();
    }

    public static ArrayNode arr() {
        return M.createArrayNode();
    }

    public static JsonNode parse(String line) throws java.io.IOException {
        return M.readTree(line);
    }

    public static String write(JsonNode n) {
        try {
            return M.writeValueAsString(n);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    public static long reqLong(JsonNode c, String f) {
        JsonNode n = c.get(f);
        if (n == null || !n.canConvertToLong()) {
            throw Refusal.bad("field '" + f + "' (an integer) is required");
        }
        return n.asLong();
    }

    public static String reqStr(JsonNode c, String f) {
        JsonNode n = c.get(f);
        if (n == null || !n.isTextual()) {
            throw Refusal.bad("field '" + f + "' (a string) is required");
        }
        return n.asText();
    }

    public static long optLong(JsonNode c, String f, long dflt) {
        JsonNode n = c.get(f);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.canConvertToLong()) {
            throw Refusal.bad("field '" + f + "' must be an integer");
        }
        return n.asLong();
    }

    public static boolean optBool(JsonNode c, String f, boolean dflt) {
        JsonNode n = c.get(f);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isBoolean()) {
            throw Refusal.bad("field '" + f + "' must be a boolean");
        }
        return n.asBoolean();
    }

    public static String optStr(JsonNode c, String f, String dflt) {
        JsonNode n = c.get(f);
        if (n == null || n.isNull()) {
            return dflt;
        }
        if (!n.isTextual()) {
            throw Refusal.bad("field '" + f + "' must be a string");
        }
        return n.asText();
    }

    /** An optional list of integers; null when absent. */
    public static List<Integer> optInts(JsonNode c, String f) {
        JsonNode n = c.get(f);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!n.isArray()) {
            throw Refusal.bad("field '" + f + "' must be an array of integers");
        }
        List<Integer> l = new ArrayList<>();
        for (JsonNode e : n) {
            if (!e.canConvertToInt()) {
                throw Refusal.bad("field '" + f + "' must be an array of integers");
            }
            l.add(e.asInt());
        }
        return l;
    }
}
