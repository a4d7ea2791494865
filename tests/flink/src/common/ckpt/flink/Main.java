package ckpt.flink;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The JSON-lines loop: a {@code hello} line, then one response line per command line. Flink's own
 * logging goes to stderr (log4j2-harness.properties), so stdout carries protocol lines only.
 *
 * <p>Exit status: 0 after end of input or a {@code quit} command; 70 after an error the harness
 * cannot answer (the last stdout line is then a {@code fatal} line saying why).
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        // Nothing but protocol lines on stdout: anything else printing there goes to stderr.
        System.setOut(System.err);
        Harness h;
        try {
            if (args.length < 1) {
                throw new IllegalArgumentException("usage: ckpt.flink.Main <harness class>");
            }
            h = (Harness) Class.forName(args[0]).getDeclaredConstructor().newInstance();
        } catch (Throwable t) {
            fatal(out, "startup", t);
            return;
        }
        out.println(Json.write(h.hello()));
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        long n = 0;
        try {
            while ((line = in.readLine()) != null) {
                n++;
                line = line.trim();
                if (line.isEmpty()) {
                    continue;
                }
                ObjectNode resp;
                JsonNode c;
                try {
                    c = Json.parse(line);
                } catch (Exception e) {
                    c = null;
                }
                if (c == null || !c.isObject() || !c.has("cmd")) {
                    resp = Json.obj();
                    resp.put("type", "response");
                    resp.put("cmd", (String) null);
                    resp.put("ok", false);
                    ObjectNode e = resp.putObject("error");
                    e.put("kind", "bad_request");
                    e.put("message", "line " + n + " is not a JSON object with a 'cmd' field");
                } else if (c.path("cmd").asText().equals("quit")) {
                    ObjectNode bye = Json.obj();
                    bye.put("type", "bye");
                    bye.put("lines", n);
                    bye.put("sequence_open", h.sequenceOpen());
                    out.println(Json.write(bye));
                    out.flush();
                    System.exit(0);
                    return;
                } else {
                    resp = h.handle(c);
                }
                out.println(Json.write(resp));
                out.flush();
            }
        } catch (Throwable t) {
            fatal(out, "line " + n, t);
            return;
        }
        ObjectNode bye = Json.obj();
        bye.put("type", "bye");
        bye.put("lines", n);
        bye.put("sequence_open", h.sequenceOpen());
        out.println(Json.write(bye));
        out.flush();
        System.exit(0);
    }

    private static void fatal(PrintStream out, String where, Throwable t) {
        try {
            ObjectNode o = Json.obj();
            o.put("type", "fatal");
            o.put("where", where);
            o.set("error", Harness.describe(t));
            out.println(Json.write(o));
            out.flush();
        } catch (Throwable ignored) {
            out.println("{\"type\":\"fatal\",\"where\":\"" + where + "\"}");
            out.flush();
        }
        t.printStackTrace();
        System.exit(70);
    }
}
