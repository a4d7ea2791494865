package ckpt.flink;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/** Dynamic proxies and reflection helpers shared by every API generation. */
public final class Proxies {
    private Proxies() {}

    /** Intercepts one call; returns {@link #PASS} to let the default behaviour run. */
    public interface Hook {
        Object call(Method m, Object[] args) throws Throwable;
    }

    public static final Object PASS = new Object();

    /** Every interface {@code c} and its superclasses implement. */
    public static Class<?>[] interfacesOf(Class<?> c) {
        Set<Class<?>> s = new LinkedHashSet<>();
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            Collections.addAll(s, k.getInterfaces());
        }
        return s.toArray(new Class<?>[0]);
    }

    /**
     * A proxy implementing every interface of {@code target}'s class that forwards each call to
     * {@code target}, unless {@code hook} answers it.
     */
    @SuppressWarnings("unchecked")
    public static <T> T forward(Object target, Hook hook) {
        Class<?>[] ifaces = interfacesOf(target.getClass());
        InvocationHandler h =
                (proxy, m, args) -> {
                    if (m.getDeclaringClass() == Object.class) {
                        switch (m.getName()) {
                            case "equals":
                                return proxy == args[0];
                            case "hashCode":
                                return System.identityHashCode(proxy);
                            case "toString":
                                return "proxy(" + target + ")";
                            default:
                                break;
                        }
                    }
                    Object r = hook == null ? PASS : hook.call(m, args);
                    if (r != PASS) {
                        return r;
                    }
                    try {
                        Method tm = findMethod(target.getClass(), m.getName(), m.getParameterTypes());
                        tm.setAccessible(true);
                        return tm.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                };
        return (T) Proxy.newProxyInstance(Proxies.class.getClassLoader(), ifaces, h);
    }

    /** A proxy of {@code iface} answering with {@code hook}, or with a neutral default. */
    @SuppressWarnings("unchecked")
    public static <T> T of(Class<T> iface, Hook hook) {
        InvocationHandler h =
                (proxy, m, args) -> {
                    if (m.getDeclaringClass() == Object.class) {
                        switch (m.getName()) {
                            case "equals":
                                return proxy == args[0];
                            case "hashCode":
                                return System.identityHashCode(proxy);
                            case "toString":
                                return iface.getSimpleName() + "@harness";
                            default:
                                break;
                        }
                    }
                    Object r = hook == null ? PASS : hook.call(m, args);
                    if (r != PASS) {
                        return r;
                    }
                    if (m.isDefault()) {
                        return InvocationHandler.invokeDefault(proxy, m, args);
                    }
                    return neutral(m.getReturnType());
                };
        return (T) Proxy.newProxyInstance(Proxies.class.getClassLoader(), new Class<?>[] {iface}, h);
    }

    public static Object neutral(Class<?> t) {
        if (t == void.class) {
            return null;
        }
        if (t == boolean.class) {
            return false;
        }
        if (t == int.class || t == short.class || t == byte.class) {
            return 0;
        }
        if (t == long.class) {
            return 0L;
        }
        if (t == double.class) {
            return 0.0;
        }
        if (t == float.class) {
            return 0.0f;
        }
        if (t == char.class) {
            return (char) 0;
        }
        if (t == CompletableFuture.class) {
            return CompletableFuture.completedFuture(null);
        }
        if (t == Optional.class) {
            return Optional.empty();
        }
        if (t == List.class || t == java.util.Collection.class || t == Iterable.class) {
            return new ArrayList<>();
        }
        if (t == Set.class) {
            return new java.util.HashSet<>();
        }
        if (t == Map.class) {
            return new java.util.HashMap<>();
        }
        return null;
    }

    public static Method findMethod(Class<?> c, String name, Class<?>... params)
            throws NoSuchMethodException {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                return k.getDeclaredMethod(name, params);
            } catch (NoSuchMethodException ignored) {
                // next
            }
        }
        // interface default methods
        return c.getMethod(name, params);
    }

    /** The first declared method of that name (any parameters), searching superclasses. */
    public static Method methodNamed(Class<?> c, String name, int arity) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (m.getName().equals(name) && (arity < 0 || m.getParameterCount() == arity)) {
                    m.setAccessible(true);
                    return m;
                }
            }
        }
        return null;
    }

    public static Object field(Object o, String name) {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // next
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no field " + name + " in " + o.getClass().getName());
    }

    public static boolean hasField(Object o, String name) {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                k.getDeclaredField(name);
                return true;
            } catch (NoSuchFieldException e) {
                // next
            }
        }
        return false;
    }

    public static Object invoke(Object o, String name, Object... args) {
        Method m = methodNamed(o.getClass(), name, args.length);
        if (m == null) {
            throw new IllegalStateException("no method " + name + "/" + args.length + " in " + o.getClass());
        }
        try {
            return m.invoke(o, args);
        } catch (InvocationTargetException e) {
            throw sneaky(e.getCause());
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    @SuppressWarnings("unchecked")
    public static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
        throw (E) t;
    }
}
