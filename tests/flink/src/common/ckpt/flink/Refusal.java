package ckpt.flink;

/** A command the harness cannot express (or a malformed one): answered with a structured error. */
public final class Refusal extends RuntimeException {
    private static final long serialVersionUID = 1L;
    public final String kind;

    public Refusal(String kind, String message) {
        super(message);
        this.kind = kind;
    }

    public static Refusal unsupported(String message) {
        return new Refusal("unsupported", message);
    }

    public static Refusal bad(String message) {
        return new Refusal("bad_request", message);
    }
}
