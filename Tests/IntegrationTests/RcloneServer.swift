import Foundation
import Glibc
import XCTest

/// Which remote a cloud test runs against: a directory (`cloud=DIR`), or a
/// real server of rclone's on 127.0.0.1 over a local directory, reached
/// through `cloud=rclone:REMOTE:PATH`.
enum CloudRemoteKind: String {
    case directory, s3, webdav

    /// Whether the store keeps a document's mode (an object store does not).
    var keepsModes: Bool { self == .directory }
}

/// `rclone serve s3` or `rclone serve webdav` on 127.0.0.1 (a port of the
/// kernel's choosing, read from rclone's log) over `directory`, with an
/// rclone configuration file naming it `purgefs-test`. Started and stopped
/// by the test; nothing leaves this machine.
final class RcloneServer {
    static let remoteName = "purgefs-test"
    let process: Process
    let configPath: String

    init(_ kind: CloudRemoteKind, serving directory: String, scratch: String) throws {
        guard Subprocess.which("rclone") != nil else {
            throw SubprocessError("rclone is not installed (scripts/bootstrap installs it)")
        }
        let log = scratch + "/rclone-serve-\(kind.rawValue).log"
        let key = "purgefs\(getpid())", secret = UUID().uuidString
        // A short directory cache, so a file another device puts in the served
        // directory shows at once; not 0s, with which the server forgets its
        // cache in a busy loop (two million log lines in 40 s at -vv) and,
        // on a loaded machine, starves the uploads the tests wait for.
        var arguments = ["rclone", "serve", kind.rawValue, "--addr", "127.0.0.1:0", "--dir-cache-time", "100ms",
                         "--poll-interval", "0", "--config", "/dev/null", "--log-file", log, directory]
        if kind == .s3 { arguments += ["--auth-key", key + "," + secret] }
        process = try Subprocess.spawn(arguments, stdoutPath: "/dev/null", stderrPath: "/dev/null")
        var port: String?
        let deadline = Date().addingTimeInterval(20)
        while port == nil, Date() < deadline, process.isRunning {
            if let text = try? String(contentsOfFile: log, encoding: .utf8),
               let range = text.range(of: #"http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression) {
                port = String(text[range].dropFirst("http://127.0.0.1:".count).dropLast())
            } else {
                usleep(10_000)
            }
        }
        guard let port else {
            process.terminate()
            throw SubprocessError("rclone serve \(kind.rawValue) did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        configPath = scratch + "/rclone.conf"
        let section: String
        switch kind {
        case .s3:
            section = "type = s3\nprovider = Other\naccess_key_id = \(key)\nsecret_access_key = \(secret)\n"
                + "endpoint = http://127.0.0.1:\(port)\nforce_path_style = true\n"
        case .webdav, .directory:
            section = "type = webdav\nurl = http://127.0.0.1:\(port)/\nvendor = other\n"
        }
        try "[\(Self.remoteName)]\n\(section)".write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    func stop() {
        process.terminate()
        Subprocess.wait(process, timeout: 10)
    }
}
