import PurgeSys

/// The crash era as a request interceptor: a file opened before a crash
/// (`purgefs crash`) answers `EIO` to every request through it, as a
/// descriptor would after a reboot. Handle numbers only grow, so the era of
/// every open file is known from one number, the first handle of the
/// current era (`CrashRecorder.firstHandleOfEra`): one atomic load a
/// request on a file, and no field of `OpenFile`.
struct CrashEra: RequestInterceptor {
    let recorder: CrashRecorder

    func intercept(_ request: InterceptedRequest) -> Interception {
        guard request.file != nil || request.source != nil else { return .proceed }
        let first = recorder.firstHandleOfEra
        if let file = request.file, file.handle < first { return .fail(.ioError) }
        if let source = request.source, source.handle < first { return .fail(.ioError) }
        return .proceed
    }
}
