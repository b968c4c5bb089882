#!/bin/sh
# One image, three roles. Spark on Kubernetes starts driver and executor pods of a SparkApplication
# with the first argument `driver` or `executor` (the contract of Spark's own image entrypoint);
# anything else runs the operator: `docker run ebb-operator [--namespace NS ...]`.
set -eu
SPARK_HOME=$(/opt/ebb/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_HOME

case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    exec "$JAVA_HOME/bin/java" \
      "-Xms${SPARK_EXECUTOR_MEMORY}" "-Xmx${SPARK_EXECUTOR_MEMORY}" \
      -cp "$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
      --podName "${SPARK_EXECUTOR_POD_NAME:-}" \
      "$@"
    ;;
  *)
    exec /opt/ebb/bin/python -m ebb_operator "$@"
    ;;
esac
