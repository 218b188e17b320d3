package dev.redlease.interop;

import java.util.Arrays;

/**
 * The arguments of one request (the tokens after the op), with checked
 * accessors: anything wrong becomes a BadRequest, answered at once.
 */
final class Args {
    private final String op;
    private final String[] tokens;

    Args(String op, String[] tokens) {
        this.op = op;
        this.tokens = tokens;
    }

    String op() {
        return op;
    }

    /** Demands exactly the arguments the usage line names. */
    Args expect(int count, String usage) throws BadRequest {
        if (tokens.length != count) {
            throw new BadRequest("usage: " + op + (usage.isEmpty() ? "" : " " + usage)
                    + " (got " + tokens.length + " argument" + (tokens.length == 1 ? "" : "s") + ")");
        }
        return this;
    }

    String str(int i) {
        return tokens[i];
    }

    long num(int i) throws BadRequest {
        try {
            return Long.parseLong(tokens[i]);
        } catch (NumberFormatException e) {
            throw new BadRequest("not an integer: " + tokens[i]);
        }
    }

    int integer(int i) throws BadRequest {
        try {
            return Integer.parseInt(tokens[i]);
        } catch (NumberFormatException e) {
            throw new BadRequest("not a 32-bit integer: " + tokens[i]);
        }
    }

    /** A comma-separated list of names, none empty. */
    String[] names(int i) throws BadRequest {
        String[] names = tokens[i].split(",", -1);
        if (Arrays.stream(names).anyMatch(String::isEmpty)) {
            throw new BadRequest("empty name in list: " + tokens[i]);
        }
        return names;
    }

    /** A malformed request; answered "err 0 0 BadRequest <why>". */
    static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;

        BadRequest(String why) {
            super(why, null, false, false);
        }
    }

    /**
     * An op this Redisson version lacks (e.g. non-reentrant locks before
     * 4.4.0); answered "err 0 0 Unsupported <why>".
     */
    static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String why) {
            super(why, null, false, false);
        }
    }
}
