import PurgeSys

/// The crash era as a request interceptor: a file opened before a crash
/// (`purgefs crash`) answers `EIO` to every request through it, as a
/// descriptor would after a reboot. One atomic load a request on a file.
struct CrashEra: RequestInterceptor {
    let recorder: CrashRecorder

    func intercept(_ request: InterceptedRequest) -> Interception {
        guard request.file != nil || request.source != nil else { return .proceed }
        let era = recorder.currentEra
        if let file = request.file, file.era != era { return .fail(.ioError) }
        if let source = request.source, source.era != era { return .fail(.ioError) }
        return .proceed
    }
}
