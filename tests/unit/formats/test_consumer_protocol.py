"""The topics of a ConsumerProtocolSubscription, every version (newer ones append fields)."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from ebb_formats.consumer_protocol import SubscriptionFormatError, subscribed_topics


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_topics_of_every_subscription_version(version: int) -> None:
    data = bytes(ConsumerProtocolSubscription(topics=["b", "a", "é"], user_data=b"x").encode(version=version))
    assert subscribed_topics(data) == ["b", "a", "é"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x00\x00", "3 bytes hold no subscription"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x05ab", "topic 0 of the subscription has length 5"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe", "not UTF-8"),
    ],
)
def test_what_is_not_a_subscription_is_an_error(data: bytes, message: str) -> None:
    with pytest.raises(SubscriptionFormatError, match=message):
        subscribed_topics(data)
