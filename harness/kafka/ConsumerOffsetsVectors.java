// Test vectors for `__consumer_offsets`, written by Apache Kafka's own classes (run from source by
// harness.kafka.consumer_offsets_vectors, on the assembled classpath).
//
// Every key kind and every value version Kafka's group coordinator has written, made with Kafka's
// generated message classes and MessageUtil (the bytes its serde puts in a record), plus what Kafka's
// coordinator writes today for a commit (GroupCoordinatorRecordHelpers through its serde). Each vector
// carries the fields as Kafka's own reader reads them back at that version: the expectation of a test is
// Kafka's interpretation, not ours. Member subscriptions and assignments are Kafka's ConsumerProtocol
// bytes. Output: JSON on stdout.
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.OffsetAndMetadata;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.OffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.OffsetCommitValue;

public class ConsumerOffsetsVectors {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HexFormat HEX = HexFormat.of();
    static final String GROUP = "group-\u00e9";  // non-ASCII: UTF-8 in the record
    static final Uuid TOPIC_ID = Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ");

    static String hex(byte[] bytes) {
        return bytes == null ? null : HEX.formatHex(bytes);
    }

    static byte[] bytes(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    static ObjectNode vector(ArrayNode out, String name, byte[] key, byte[] value) {
        ObjectNode v = out.addObject();
        v.put("name", name);
        v.put("key", hex(key));
        v.put("value", hex(value));
        return v;
    }

    static void offsetKey(ObjectNode into, OffsetCommitKey k) {
        ObjectNode f = into.putObject("key_fields");
        f.put("group", k.group()).put("topic", k.topic()).put("partition", k.partition());
    }

    static void offsetValue(ObjectNode into, byte[] value, short version) {
        OffsetCommitValue v = new OffsetCommitValue(new ByteBufferAccessor(ByteBuffer.wrap(value, 2, value.length - 2)), version);
        ObjectNode f = into.putObject("value_fields");
        f.put("version", version).put("offset", v.offset()).put("leader_epoch", v.leaderEpoch());
        f.put("metadata", v.metadata()).put("commit_timestamp", v.commitTimestamp());
        f.put("expire_timestamp", v.expireTimestamp());
    }

    static byte[] subscription(List<String> topics) {
        return bytes(ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(topics)));
    }

    static byte[] assignment(List<TopicPartition> partitions) {
        return bytes(ConsumerProtocol.serializeAssignment(new ConsumerPartitionAssignor.Assignment(partitions)));
    }

    public static void main(String[] args) throws Exception {
        ObjectNode root = JSON.createObjectNode();
        root.put("kafka_version", AppInfoParser.getVersion());
        ArrayNode out = root.putArray("vectors");

        OffsetCommitKey ok = new OffsetCommitKey().setGroup(GROUP).setTopic("orders").setPartition(7);
        offsetKey(vector(out, "OffsetCommitKey type 1", MessageUtil.toCoordinatorTypePrefixedBytes(ok), null), ok);
        offsetKey(vector(out, "OffsetCommitKey type 0 (before Kafka 2.x)", MessageUtil.toVersionPrefixedBytes((short) 0, ok), null), ok);
        GroupMetadataKey gk = new GroupMetadataKey().setGroup(GROUP);
        vector(out, "GroupMetadataKey", MessageUtil.toCoordinatorTypePrefixedBytes(gk), null)
            .putObject("key_fields").put("group", GROUP);

        for (short version = 0; version <= OffsetCommitValue.HIGHEST_SUPPORTED_VERSION; version++) {
            OffsetCommitValue v = new OffsetCommitValue()
                .setOffset(1234567890123L)
                .setLeaderEpoch(5)
                .setMetadata("m\u00e9ta")
                .setCommitTimestamp(1700000000000L)
                .setExpireTimestamp(version == 1 ? 1700086400000L : -1L)
                .setTopicId(version >= 4 ? TOPIC_ID : Uuid.ZERO_UUID);
            byte[] value = MessageUtil.toVersionPrefixedBytes(version, v);
            offsetValue(vector(out, "OffsetCommitValue v" + version, null, value), value, version);
        }

        byte[] sub1 = subscription(List.of("orders", "payments"));
        byte[] sub2 = subscription(List.of("orders"));
        byte[] asg1 = assignment(List.of(new TopicPartition("orders", 0), new TopicPartition("payments", 1)));
        for (short version = 0; version <= GroupMetadataValue.HIGHEST_SUPPORTED_VERSION; version++) {
            GroupMetadataValue g = new GroupMetadataValue()
                .setProtocolType("consumer")
                .setGeneration(3)
                .setProtocol("range")
                .setLeader("m-1")
                .setCurrentStateTimestamp(1700000000123L)
                .setMembers(List.of(
                    new GroupMetadataValue.MemberMetadata()
                        .setMemberId("m-1").setGroupInstanceId(version >= 3 ? "static-1" : null)
                        .setClientId("client-1").setClientHost("/10.0.0.1")
                        .setRebalanceTimeout(300000).setSessionTimeout(45000)
                        .setSubscription(sub1).setAssignment(asg1),
                    new GroupMetadataValue.MemberMetadata()
                        .setMemberId("m-2").setGroupInstanceId(null)
                        .setClientId("client-2").setClientHost("/10.0.0.2")
                        .setRebalanceTimeout(300000).setSessionTimeout(45000)
                        .setSubscription(sub2).setAssignment(new byte[0])));
            byte[] value = MessageUtil.toVersionPrefixedBytes(version, g);
            GroupMetadataValue back = new GroupMetadataValue(new ByteBufferAccessor(ByteBuffer.wrap(value, 2, value.length - 2)), version);
            ObjectNode f = vector(out, "GroupMetadataValue v" + version, null, value).putObject("value_fields");
            f.put("version", version).put("protocol_type", back.protocolType()).put("generation", back.generation());
            f.put("protocol", back.protocol()).put("leader", back.leader());
            f.put("current_state_timestamp", back.currentStateTimestamp());
            ArrayNode members = f.putArray("members");
            for (GroupMetadataValue.MemberMetadata m : back.members()) {
                ObjectNode mm = members.addObject();
                mm.put("member_id", m.memberId()).put("group_instance_id", m.groupInstanceId());
                mm.put("client_id", m.clientId()).put("client_host", m.clientHost());
                mm.put("rebalance_timeout", m.rebalanceTimeout()).put("session_timeout", m.sessionTimeout());
                mm.put("subscription", hex(m.subscription())).put("assignment", hex(m.assignment()));
                ArrayNode topics = mm.putArray("subscribed_topics");
                ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(m.subscription())).topics().forEach(topics::add);
            }
        }

        // What Kafka's coordinator itself writes for a commit, through its own helpers and serde.
        GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
        OffsetAndMetadata[] commits = {
            new OffsetAndMetadata(42L, OptionalInt.of(3), "", 1700000000000L, OptionalLong.empty(), TOPIC_ID),
            new OffsetAndMetadata(43L, OptionalInt.empty(), "meta", 1700000000000L, OptionalLong.of(1700086400000L), Uuid.ZERO_UUID),
        };
        for (OffsetAndMetadata commit : commits) {
            CoordinatorRecord record = GroupCoordinatorRecordHelpers.newOffsetCommitRecord(GROUP, "orders", 7, commit);
            byte[] value = serde.serializeValue(record);
            short version = ByteBuffer.wrap(value).getShort();
            ObjectNode v = vector(out, "Kafka's coordinator: a commit" + (commit.expireTimestampMs.isPresent() ? " with an expire timestamp" : ""),
                serde.serializeKey(record), value);
            offsetKey(v, ok);
            offsetValue(v, value, version);
        }
        CoordinatorRecord tombstone = GroupCoordinatorRecordHelpers.newOffsetCommitTombstoneRecord(GROUP, "orders", 7);
        offsetKey(vector(out, "Kafka's coordinator: an offset tombstone", serde.serializeKey(tombstone), serde.serializeValue(tombstone)), ok);
        CoordinatorRecord groupTombstone = GroupCoordinatorRecordHelpers.newGroupMetadataTombstoneRecord(GROUP);
        vector(out, "Kafka's coordinator: a group tombstone", serde.serializeKey(groupTombstone), serde.serializeValue(groupTombstone))
            .putObject("key_fields").put("group", GROUP);

        System.out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root));
    }
}
