"""The broker connection (paho-mqtt): reconnects by itself, with a retained "offline" will
on `{prefix}/status`. paho's network loop runs on its own thread (a green thread under
the controller's eventlet), so a slow broker never holds up the controller."""
from __future__ import annotations

from collections.abc import Callable

import paho.mqtt.client as paho


class PahoLink:
    def __init__(self, host: str, port: int, username: str, password: str, prefix: str,
                 on_connect: Callable[[], None], on_message: Callable[[str, bytes], None]):
        self.host, self.port, self.prefix = host, port, prefix
        self.client = paho.Client(client_id=f"homework-{prefix.replace('/', '-')}", clean_session=True)
        if username:
            self.client.username_pw_set(username, password)
        self.client.will_set(f"{prefix}/status", "offline", qos=1, retain=True)
        self.client.reconnect_delay_set(1, 30)
        self.connected = False

        def connected(_c, _u, _flags, rc):
            self.connected = rc == 0
            if rc == 0:
                self.publish(f"{prefix}/status", "online")
                on_connect()
        self.client.on_connect = connected
        self.client.on_disconnect = lambda *_a: setattr(self, "connected", False)
        self.client.on_message = lambda _c, _u, msg: on_message(msg.topic, msg.payload)

    def start(self) -> None:
        self.client.connect_async(self.host, self.port, keepalive=30)
        self.client.loop_start()

    def publish(self, topic: str, payload: str, retain: bool = True) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain)

    def subscribe(self, topic: str) -> None:
        self.client.subscribe(topic, qos=1)

    def stop(self) -> None:
        self.publish(f"{self.prefix}/status", "offline")
        self.client.disconnect()
        self.client.loop_stop()
