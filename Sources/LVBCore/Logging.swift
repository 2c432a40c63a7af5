import Logging

/// Logger factory so every module labels its logs the same way.
public enum Log {
    public static func logger(_ component: String) -> Logger {
        Logger(label: "lvbnode.\(component)")
    }
}
