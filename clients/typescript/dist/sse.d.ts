/** One dispatched event: its `event` name (default `message`), its `data` and the last `id` seen. */
export interface ServerSentEvent {
    event: string;
    data: string;
    id: string;
}
/**
 * The events of an event stream, in order. Reading stops when the body ends or the consumer stops
 * iterating (which cancels the body, closing the connection).
 */
export declare function readServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent>;
